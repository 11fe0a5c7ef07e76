#include "data/file_io.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <span>
#include <system_error>

#include "core/error.h"
#include "data/gzip.h"

namespace engine::data {
namespace {

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

bool is_regular_file(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec);
}

std::vector<std::uint8_t> read_file(const std::string& path, std::size_t max_bytes) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  ENGINE_CHECK(status.type() != fs::file_type::not_found, "{}: no such file", path);
  ENGINE_CHECK(!ec, "{}: cannot stat: {}", path, ec.message());
  ENGINE_CHECK(status.type() != fs::file_type::directory, "{}: is a directory, expected a file", path);
  ENGINE_CHECK(status.type() == fs::file_type::regular, "{}: is not a regular file", path);

  errno = 0;
  std::unique_ptr<std::FILE, FileCloser> file(std::fopen(path.c_str(), "rb"));
  ENGINE_CHECK(file != nullptr, "{}: cannot open: {}", path, std::strerror(errno));

  // Read to end of file rather than trusting the size from stat: /proc files report 0, and a file can change.
  std::vector<std::uint8_t> bytes;
  const auto size_hint = fs::file_size(path, ec);
  if (!ec && size_hint > 0) bytes.reserve(std::min(static_cast<std::size_t>(size_hint) + 1, max_bytes));
  std::uint8_t chunk[1 << 16];
  while (bytes.size() < max_bytes) {
    const std::size_t want = std::min(sizeof(chunk), max_bytes - bytes.size());
    const std::size_t got = std::fread(chunk, 1, want, file.get());
    bytes.insert(bytes.end(), chunk, chunk + got);
    if (got < want) {
      ENGINE_CHECK(!std::ferror(file.get()), "{}: read failed after {} bytes: {}", path, bytes.size(),
                   std::strerror(errno));
      break;
    }
  }
  return bytes;
}

std::vector<std::uint8_t> read_file_maybe_gzip(const std::string& path) {
  std::vector<std::uint8_t> bytes = read_file(path);
  const std::span<const std::uint8_t> view(bytes);
  if (ends_with(path, ".gz") || is_gzip(view)) return gunzip(view, path);
  return bytes;
}

}  // namespace engine::data
