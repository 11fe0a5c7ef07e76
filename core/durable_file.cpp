#include "core/durable_file.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <unistd.h>

#include "core/error.h"

namespace engine {
namespace {

constexpr std::size_t kChunkBytes = std::size_t{4} << 20;

// A POSIX file descriptor closed on scope exit.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

void write_all(const std::string& what, int fd, std::span<const std::uint8_t> bytes, const std::string& path,
               std::size_t& written, const DurableWriteOptions& options) {
  const std::uint8_t* data = bytes.data();
  std::size_t size = bytes.size();
  while (size > 0) {
    const std::size_t chunk = std::min(size, kChunkBytes);
    const ssize_t n = ::write(fd, data, chunk);
    if (n < 0 && errno == EINTR) continue;
    ENGINE_CHECK(n > 0, "{}: cannot write '{}': {}", what, path, std::strerror(errno));
    data += n;
    size -= static_cast<std::size_t>(n);
    written += static_cast<std::size_t>(n);
    if (options.after_chunk) options.after_chunk(written);
  }
}

}  // namespace

void write_file_durably(const std::string& what, const std::string& path,
                        std::span<const std::span<const std::uint8_t>> pieces,
                        const DurableWriteOptions& options) {
  const std::filesystem::path target(path);
  const std::filesystem::path folder = target.has_parent_path() ? target.parent_path() : ".";
  const std::string temp = path + ".tmp-" + std::to_string(::getpid());
  {
    Fd out{::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)};
    ENGINE_CHECK(out.fd >= 0, "{}: cannot write '{}': {}", what, temp, std::strerror(errno));
    try {
      std::size_t written = 0;
      for (const std::span<const std::uint8_t> piece : pieces)
        write_all(what, out.fd, piece, temp, written, options);
      ENGINE_CHECK(::fsync(out.fd) == 0, "{}: cannot flush '{}': {}", what, temp, std::strerror(errno));
      // close can report a write-back failure (NFS, a failing disk): the file is not renamed then.
      const int fd = out.fd;
      out.fd = -1;
      ENGINE_CHECK(::close(fd) == 0, "{}: cannot close '{}': {}", what, temp, std::strerror(errno));
    } catch (...) {
      std::error_code ignored;
      std::filesystem::remove(temp, ignored);
      throw;
    }
  }
  std::error_code ec;
  std::filesystem::rename(temp, target, ec);
  if (ec) {
    std::error_code ignored;
    std::filesystem::remove(temp, ignored);
    ENGINE_FAIL("{}: cannot rename '{}' to '{}': {}", what, temp, path, ec.message());
  }
  // The rename itself is durable once the folder is flushed.
  // EINVAL: a file system that cannot flush a folder (some network and FUSE ones); nothing more to do there.
  Fd dir{::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
  ENGINE_CHECK(dir.fd >= 0 || errno == EACCES, "{}: cannot open folder '{}' to flush '{}': {}", what,
               folder.string(), path, std::strerror(errno));
  ENGINE_CHECK(dir.fd < 0 || ::fsync(dir.fd) == 0 || errno == EINVAL,
               "{}: cannot flush folder '{}' after writing '{}': {}", what, folder.string(), path,
               std::strerror(errno));
}

}  // namespace engine
