// The CI acceptance runs of cnn_train on the CPU: 2,000 training and 1,000 test images, one epoch, default
// hyperparameters. MNIST must reach 85% test accuracy, Fashion-MNIST 70%. Skipped with a message where the
// data is absent (MNIST: tests/common/environment.h; Debian's dataset-fashion-mnist).

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "tests/common/environment.h"
#include "tests/cpu/cnn_train_test_util.h"

namespace engine::apps {
namespace {

// The number in the last line, "Test Acc: 90.50%"; -1 when the output does not end so.
double final_test_accuracy(const std::string& output) {
  const std::string key = "\nTest Acc: ";
  const std::size_t at = output.rfind(key);
  if (at == std::string::npos || output.size() < 2 || output.substr(output.size() - 2) != "%\n") return -1.0;
  return std::strtod(output.c_str() + at + key.size(), nullptr);
}

void expect_accuracy(const std::string& dataset, const std::string& root, double minimum) {
  const auto start = std::chrono::steady_clock::now();
  const testing::RunResult r = testing::run_train(
      {"--cpu", "--dataset", dataset, "--data-dir", root, "--limit-train", "2000", "--limit-test", "1000",
       "--epochs", "1", "--checkpoint-dir", testing::temp_dir("accept_" + dataset)});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const double acc = final_test_accuracy(r.output);
  EXPECT_GE(acc, minimum) << r.output;
#if !defined(__SANITIZE_ADDRESS__)  // the sanitizer build (scripts/test.sh) is several times slower
  EXPECT_LT(seconds, 60.0) << "must finish well inside a minute on 2 cores";
#endif
  std::printf("%s: %.2f%% test accuracy in %.1f s\n%s", dataset.c_str(), acc, seconds, r.output.c_str());
}

TEST(CnnTrainAcceptance, MnistReaches85PercentInOneEpochOn2000Images) {
  const std::string root = engine::testing::mnist_dir();
  if (root.empty()) GTEST_SKIP() << "MNIST not found: set MNIST_DIR (tests/common/environment.h)";
  expect_accuracy("mnist", root, 85.0);
}

TEST(CnnTrainAcceptance, FashionMnistReaches70PercentInOneEpochOn2000Images) {
  const std::string root = "/usr/share/datasets/fashion-mnist";
  if (!std::filesystem::exists(root + "/t10k-labels-idx1-ubyte.gz")) {
    GTEST_SKIP() << "Fashion-MNIST not found: install Debian's dataset-fashion-mnist";
  }
  expect_accuracy("fashion-mnist", root, 70.0);
}

}  // namespace
}  // namespace engine::apps
