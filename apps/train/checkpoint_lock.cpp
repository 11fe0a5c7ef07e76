#include "apps/train/checkpoint_lock.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include "core/error.h"

namespace engine::apps {

namespace {

// What the holder wrote ("pid 4242 on host node1"), or a note when it has not written it yet.
std::string holder_of(int fd) {
  char buffer[256] = {};
  const ssize_t n = ::pread(fd, buffer, sizeof buffer - 1, 0);
  std::string text = n > 0 ? std::string(buffer, static_cast<std::size_t>(n)) : std::string();
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  return text.empty() ? "a process that has not written its pid yet" : text;
}

}  // namespace

CheckpointDirLock::CheckpointDirLock(const std::string& dir) : dir_(dir) {
  std::error_code ec;
  created_ = std::filesystem::create_directories(dir, ec);
  ENGINE_CHECK(!ec && std::filesystem::is_directory(dir),
               "--checkpoint-dir '{}': cannot create the folder: {}", dir,
               ec ? ec.message() : "not a folder");
  path_ = (std::filesystem::path(dir) / kCheckpointLockName).string();
  // A run that ends with nothing saved removes the lock file (below): a lock taken on a file that was removed
  // meanwhile protects nothing, so it is taken again on the file the name now holds.
  for (bool locked = false; !locked;) {
    lock_once(dir);
    struct stat held {
    }, named{};
    locked = ::fstat(fd_, &held) == 0 && ::stat(path_.c_str(), &named) == 0 && held.st_ino == named.st_ino &&
             held.st_dev == named.st_dev;
    if (!locked) {
      ::close(fd_);
      fd_ = -1;
    }
  }
  char host[256] = {};
  const bool named = ::gethostname(host, sizeof host - 1) == 0;
  const std::string text = fmt::format("pid {} on host {}\n", ::getpid(), named ? host : "?");
  // Best effort: the lock itself is what protects the folder; the text only names its holder.
  if (::ftruncate(fd_, 0) == 0) {
    [[maybe_unused]] const ssize_t written = ::pwrite(fd_, text.data(), text.size(), 0);
  }
}

void CheckpointDirLock::lock_once(const std::string& dir) {
  // O_CLOEXEC: gnuplot and the launcher's workers must not inherit the lock and keep it past this process.
  fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  ENGINE_CHECK(fd_ >= 0, "--checkpoint-dir '{}': cannot open {}: {}", dir, path_, std::strerror(errno));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    const std::string holder = error == EWOULDBLOCK ? holder_of(fd_) : std::string();
    ::close(fd_);
    fd_ = -1;
    ENGINE_CHECK(
        error != EWOULDBLOCK,
        "--checkpoint-dir '{}': another cnn_train is training into this folder ({}, holding {}); two "
        "runs would overwrite each other's checkpoints: wait for it to end, or give another "
        "--checkpoint-dir",
        dir, holder, path_);
    ENGINE_FAIL("--checkpoint-dir '{}': cannot lock {}: {}", dir, path_, std::strerror(error));
  }
}

CheckpointDirLock::~CheckpointDirLock() {
  if (fd_ < 0) return;
  // A run that saved nothing (it failed, or was stopped, before its first checkpoint) leaves no folder
  // holding only the lock: the file goes while still locked, and the folder too when this run made it.
  std::error_code ec;
  bool only_lock = true;
  for (const auto& entry : std::filesystem::directory_iterator(dir_, ec)) {
    if (entry.path().filename() != kCheckpointLockName) only_lock = false;
  }
  if (!ec && only_lock && ::unlink(path_.c_str()) == 0 && created_) ::rmdir(dir_.c_str());
  ::close(fd_);
}

}  // namespace engine::apps
