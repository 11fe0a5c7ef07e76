#pragma once
// Scratch directories for tests that write files (cnn_train's outputs, checkpoints, small datasets):
// <tmp>/cnn_engine_<name>_<pid>, empty when handed out, and removed when the test process that made them
// exits. Without that, every test process left its directories behind (about 800 processes a suite run, some
// writing 170 MB each): a few suite runs filled the disk. ENGINE_KEEP_TEST_DIRS=1 keeps them, to look at a
// failure. Only the process that made a directory removes it (a forked child that exits normally must not
// take its parent's directories with it).

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <string>
#include <unistd.h>
#include <vector>

namespace engine::testing {

class ScratchDirs {
 public:
  static ScratchDirs& instance() {
    static ScratchDirs dirs;
    return dirs;
  }
  void add(const std::filesystem::path& dir) {
    std::lock_guard<std::mutex> lock(mutex_);
    dirs_.push_back(dir);
  }
  ~ScratchDirs() {
    const char* keep = std::getenv("ENGINE_KEEP_TEST_DIRS");
    if (::getpid() != owner_ || (keep != nullptr && std::string(keep) == "1")) return;
    for (const std::filesystem::path& dir : dirs_) {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);  // best effort: a test may have removed it already
    }
  }
  ScratchDirs(const ScratchDirs&) = delete;
  ScratchDirs& operator=(const ScratchDirs&) = delete;

 private:
  ScratchDirs() = default;
  const pid_t owner_ = ::getpid();
  std::mutex mutex_;
  std::vector<std::filesystem::path> dirs_;
};

// <tmp>/<prefix><name>_<pid>, emptied if it exists, NOT created (some callers want it absent); removed at
// exit.
inline std::filesystem::path scratch_path(const std::string& prefix, const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / (prefix + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  ScratchDirs::instance().add(dir);
  return dir;
}

// The same, created empty.
inline std::filesystem::path scratch_dir(const std::string& prefix, const std::string& name) {
  auto dir = scratch_path(prefix, name);
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace engine::testing
