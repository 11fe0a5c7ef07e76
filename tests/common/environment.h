#pragma once
// What the tests find on the machine, in one place: the real datasets, and the external tools (gnuplot, curl)
// some program tests run.
//
// A dataset's folder is, in this order: the variable ($CIFAR10_DIR, $MNIST_DIR) when it is set (and then only
// it: a set variable that names no data means "absent"); else <repo>/.gpu-data/merged/<name>, where the data
// parts carried to a GPU machine are merged (scripts/gpu-data.sh; scripts/gpu-check.sh also sets the
// variables); else shared/data/<name> beside or inside the repository, else /work/shared/data/<name>. A
// folder counts only when it holds `marker`. Tests skip, saying so, where a dataset or a tool is absent.

#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <unistd.h>

#include <gtest/gtest.h>

namespace engine::testing {

// The repository root, whatever the test's working directory (tests/common/environment.cpp).
std::filesystem::path repo_root();

// The dataset folder holding `marker` (a path relative to it), or "" when there is none.
inline std::string dataset_dir(const char* env, const std::string& name, const std::string& marker) {
  namespace fs = std::filesystem;
  if (const char* v = std::getenv(env); v && *v)
    return fs::exists(fs::path(v) / marker) ? std::string(v) : "";
  const fs::path repo = repo_root();
  for (const fs::path& c : {repo / ".gpu-data/merged" / name, repo.parent_path() / "shared/data" / name,
                            repo / "shared/data" / name, fs::path("/work/shared/data") / name}) {
    if (fs::exists(c / marker)) return c.string();
  }
  return {};
}

inline std::string cifar10_dir() {
  return dataset_dir("CIFAR10_DIR", "cifar10", "cifar-10-batches-bin/test_batch.bin.gz");
}
inline std::string mnist_dir() { return dataset_dir("MNIST_DIR", "mnist", "t10k-labels-idx1-ubyte.gz"); }

// True when `tool` is an executable file in a folder of $PATH (as execvp would find it).
inline bool on_path(std::string_view tool) {
  const char* path = std::getenv("PATH");
  std::string_view rest = path ? path : "";
  while (true) {
    const std::size_t colon = rest.find(':');
    const std::string dir(rest.substr(0, colon));
    const std::filesystem::path candidate = std::filesystem::path(dir.empty() ? "." : dir) / tool;
    std::error_code ec;
    if (std::filesystem::is_regular_file(candidate, ec) && ::access(candidate.c_str(), X_OK) == 0)
      return true;
    if (colon == std::string_view::npos) return false;
    rest.remove_prefix(colon + 1);
  }
}

}  // namespace engine::testing

// Skips the test, saying why, when `tool` (a C string) is not on $PATH: a machine without it (the GPU image
// has no gnuplot) still runs every other test.
#define SKIP_WITHOUT_TOOL(tool)                                                                       \
  do {                                                                                                \
    if (!::engine::testing::on_path(tool)) GTEST_SKIP() << (tool) << " is not on PATH: test skipped"; \
  } while (0)
