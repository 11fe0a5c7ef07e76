#include "apps/train/checkpoint_lock.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <sys/file.h>
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

CheckpointDirLock::CheckpointDirLock(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  ENGINE_CHECK(!ec && std::filesystem::is_directory(dir),
               "--checkpoint-dir '{}': cannot create the folder: {}", dir,
               ec ? ec.message() : "not a folder");
  const std::string path = (std::filesystem::path(dir) / kCheckpointLockName).string();
  // O_CLOEXEC: gnuplot and the launcher's workers must not inherit the lock and keep it past this process.
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  ENGINE_CHECK(fd_ >= 0, "--checkpoint-dir '{}': cannot open {}: {}", dir, path, std::strerror(errno));
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
        dir, holder, path);
    ENGINE_FAIL("--checkpoint-dir '{}': cannot lock {}: {}", dir, path, std::strerror(error));
  }
  char host[256] = {};
  const bool named = ::gethostname(host, sizeof host - 1) == 0;
  const std::string text = fmt::format("pid {} on host {}\n", ::getpid(), named ? host : "?");
  // Best effort: the lock itself is what protects the folder; the text only names its holder.
  if (::ftruncate(fd_, 0) == 0) {
    [[maybe_unused]] const ssize_t written = ::pwrite(fd_, text.data(), text.size(), 0);
  }
}

CheckpointDirLock::~CheckpointDirLock() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace engine::apps
