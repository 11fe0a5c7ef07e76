#include "data/tar.h"

#include <algorithm>
#include <string_view>

#include "core/error.h"

namespace engine::data {
namespace {

constexpr std::size_t kBlock = 512;

// A NUL-terminated (or full-width) text field of a header.
std::string field(const std::uint8_t* p, std::size_t width) {
  const auto* begin = reinterpret_cast<const char*>(p);
  return std::string(begin, std::find(begin, begin + width, '\0'));
}

// An octal number field (leading spaces or zeros, ending at NUL or space), or GNU base-256 when the first
// byte has its high bit set. Returns false for anything else or for values past 2^62.
bool parse_number(const std::uint8_t* p, std::size_t width, std::uint64_t& value) {
  value = 0;
  if (p[0] & 0x80) {  // base-256: the remaining bits, big-endian; negative values are not sizes
    if (p[0] & 0x40) return false;
    value = p[0] & 0x3f;
    for (std::size_t i = 1; i < width; ++i) {
      if (value >> 54) return false;
      value = value << 8 | p[i];
    }
    return true;
  }
  std::size_t i = 0;
  while (i < width && p[i] == ' ') ++i;
  bool any = false;
  for (; i < width && p[i] >= '0' && p[i] <= '7'; ++i) {
    if (value >> 59) return false;
    value = value << 3 | static_cast<std::uint64_t>(p[i] - '0');
    any = true;
  }
  for (; i < width; ++i) {
    if (p[i] != ' ' && p[i] != '\0') return false;
  }
  return any;
}

bool all_zero(const std::uint8_t* p, std::size_t n) {
  return std::all_of(p, p + n, [](std::uint8_t b) { return b == 0; });
}

// The "path" record of a pax extended header: lines "LEN key=value\n".
std::string pax_path(std::span<const std::uint8_t> data) {
  const std::string_view text(reinterpret_cast<const char*>(data.data()), data.size());
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t space = text.find(' ', pos);
    if (space == std::string_view::npos) break;
    std::size_t len = 0;
    for (std::size_t i = pos; i < space; ++i) {
      if (text[i] < '0' || text[i] > '9' || len > text.size()) return {};
      len = len * 10 + static_cast<std::size_t>(text[i] - '0');
    }
    if (len <= space - pos + 1 || len > text.size() - pos) return {};
    const std::string_view record = text.substr(space + 1, len - (space - pos) - 2);  // minus ' ' and '\n'
    if (record.starts_with("path=")) return std::string(record.substr(5));
    pos += len;
  }
  return {};
}

}  // namespace

std::vector<TarMember> list_tar(std::span<const std::uint8_t> archive, const std::string& source) {
  std::vector<TarMember> members;
  std::string next_name;  // from a preceding GNU 'L' or pax 'x' entry
  std::size_t offset = 0;
  while (offset < archive.size()) {
    ENGINE_CHECK(archive.size() - offset >= kBlock, "{}: truncated tar header at offset {} ({} bytes left)",
                 source, offset, archive.size() - offset);
    const std::uint8_t* h = archive.data() + offset;
    if (all_zero(h, kBlock)) break;  // end-of-archive marker

    std::uint64_t stored_sum = 0;
    std::uint64_t sum = 8 * ' ';  // the checksum field counts as spaces
    for (std::size_t i = 0; i < kBlock; ++i) sum += (i >= 148 && i < 156) ? 0 : h[i];
    ENGINE_CHECK(parse_number(h + 148, 8, stored_sum) && stored_sum == sum,
                 "{}: not a tar archive, or corrupt: bad header checksum at offset {}", source, offset);
    std::uint64_t size = 0;
    ENGINE_CHECK(parse_number(h + 124, 12, size), "{}: unreadable member size in the tar header at offset {}",
                 source, offset);
    const std::size_t data_begin = offset + kBlock;
    ENGINE_CHECK(size <= archive.size() - data_begin,
                 "{}: tar member at offset {} needs {} bytes, but the archive ends {} bytes later", source,
                 offset, size, archive.size() - data_begin);
    const auto data = archive.subspan(data_begin, static_cast<std::size_t>(size));
    const std::size_t padded = (static_cast<std::size_t>(size) + kBlock - 1) / kBlock * kBlock;
    offset = data_begin + std::min(padded, archive.size() - data_begin);

    const char type = static_cast<char>(h[156]);
    if (type == 'L') {  // GNU long name: the data is the next entry's name
      next_name = field(data.data(), data.size());
      continue;
    }
    if (type == 'x') {  // pax extended header for the next entry
      next_name = pax_path(data);
      continue;
    }
    if (type == '0' || type == '\0' || type == '7') {
      std::string name = field(h, 100);
      if (std::string_view(reinterpret_cast<const char*>(h + 257), 5) == "ustar") {
        const std::string prefix = field(h + 345, 155);
        if (!prefix.empty()) name = prefix + "/" + name;
      }
      if (!next_name.empty()) name = next_name;
      members.push_back({std::move(name), data});
    }
    next_name.clear();
  }
  return members;
}

}  // namespace engine::data
