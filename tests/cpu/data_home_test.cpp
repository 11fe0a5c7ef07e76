// Where a dataset is looked for without --data-dir (data/data_home.h; issue 28): the user's cache, never a
// folder of the source tree (./data/cifar10 run from the repository's root was inside its data/ sources).
#include "data/data_home.h"

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "data/cifar10.h"
#include "data/idx.h"
#include "tests/common/environment.h"

namespace engine::data {
namespace {

// Sets (or, with nullopt, unsets) an environment variable for the scope of a test.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::optional<std::string>& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) {
      ::setenv(name, value->c_str(), 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(DataHome, TheUsersCacheFolder) {
  const ScopedEnv home("HOME", "/home/ada");
  {
    const ScopedEnv xdg("XDG_CACHE_HOME", std::nullopt);
    EXPECT_EQ(user_data_dir("cifar10"), "/home/ada/.cache/cnn_engine/cifar10");
  }
  {
    const ScopedEnv xdg("XDG_CACHE_HOME", "/scratch/cache");
    EXPECT_EQ(user_data_dir("mnist"), "/scratch/cache/cnn_engine/mnist");
  }
  {
    const ScopedEnv xdg("XDG_CACHE_HOME", "relative/cache");  // invalid by the XDG rule: ignored
    EXPECT_EQ(user_data_dir("mnist"), "/home/ada/.cache/cnn_engine/mnist");
  }
}

TEST(DataHome, TheReadersDefaultsAreThereUnlessTheVariableSaysElsewhere) {
  const ScopedEnv xdg("XDG_CACHE_HOME", "/scratch/cache");
  {
    const ScopedEnv cifar("CIFAR10_DIR", std::nullopt);
    const ScopedEnv mnist("MNIST_DIR", std::nullopt);
    EXPECT_EQ(default_cifar10_root(), "/scratch/cache/cnn_engine/cifar10");
    EXPECT_EQ(default_mnist_root(), "/scratch/cache/cnn_engine/mnist");
  }
  const ScopedEnv cifar("CIFAR10_DIR", "/data/c10");
  EXPECT_EQ(default_cifar10_root(), "/data/c10");
}

TEST(DataHome, NeverInsideTheSourceTree) {
  const ScopedEnv xdg("XDG_CACHE_HOME", std::nullopt);
  const ScopedEnv cifar("CIFAR10_DIR", std::nullopt);
  const std::filesystem::path root = default_cifar10_root();
  EXPECT_TRUE(root.is_absolute()) << root;  // not relative to wherever the program is run from
  const std::string repo = std::filesystem::weakly_canonical(engine::testing::repo_root()).string() + "/";
  EXPECT_FALSE(std::filesystem::weakly_canonical(root).string().starts_with(repo)) << root;
}

}  // namespace
}  // namespace engine::data
