#include "optim/safetensors.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "core/durable_file.h"
#include "core/error.h"

namespace engine::optim {

static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian, as this host");

namespace {

constexpr std::uint64_t kMaxHeaderBytes = 100'000'000;  // safetensors' own limit (100 MB)
constexpr std::size_t kReadChunkBytes = std::size_t{4} << 20;

std::uint64_t numel_of(const Shape& shape) {
  std::uint64_t n = 1;
  for (const std::int64_t d : shape) n *= static_cast<std::uint64_t>(d);
  return n;
}

// A POSIX file descriptor closed on scope exit.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

std::size_t safetensors_dtype_size(const std::string& dtype) {
  static const std::map<std::string, std::size_t> kSizes = {
      {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E5M2", 1}, {"F8_E4M3", 1}, {"I16", 2}, {"U16", 2}, {"F16", 2},
      {"BF16", 2}, {"I32", 4}, {"U32", 4}, {"F32", 4},     {"F64", 8},     {"I64", 8}, {"U64", 8}};
  const auto it = kSizes.find(dtype);
  return it == kSizes.end() ? 0 : it->second;
}

void write_safetensors(const std::string& path, const std::vector<TensorRecord>& tensors,
                       const std::map<std::string, std::string>& metadata, const WriteOptions& options) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::uint64_t offset = 0;
  for (const TensorRecord& t : tensors) {
    const std::size_t elem = safetensors_dtype_size(t.dtype);
    ENGINE_CHECK(elem > 0, "'{}': tensor '{}' has an unknown dtype '{}'", path, t.name, t.dtype);
    ENGINE_CHECK(t.name != "__metadata__" && !header.contains(t.name),
                 "'{}': tensor name '{}' repeated or reserved", path, t.name);
    ENGINE_CHECK(numel_of(t.shape) * elem == t.bytes.size(), "'{}': tensor '{}' {} {} has {} bytes", path,
                 t.name, t.dtype, shape_str(t.shape), t.bytes.size());
    header[t.name] = {
        {"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.bytes.size()}}};
    offset += t.bytes.size();
  }
  std::string text = header.dump();
  text.append((8 - (8 + text.size()) % 8) % 8, ' ');  // the data block starts 8-byte aligned
  std::uint8_t length[8];
  const std::uint64_t n = text.size();
  std::memcpy(length, &n, 8);

  std::vector<std::span<const std::uint8_t>> pieces{
      {length, 8}, {reinterpret_cast<const std::uint8_t*>(text.data()), text.size()}};
  for (const TensorRecord& t : tensors) pieces.emplace_back(t.bytes.data(), t.bytes.size());
  write_file_durably("checkpoint", path, pieces, {.after_chunk = options.after_chunk});
}

SafetensorsFile SafetensorsFile::read(const std::string& path) {
  std::error_code ec;
  ENGINE_CHECK(std::filesystem::exists(path, ec), "checkpoint '{}' does not exist", path);
  ENGINE_CHECK(!std::filesystem::is_directory(path, ec), "checkpoint '{}' is a directory, not a file", path);
  // POSIX reads: an istreambuf_iterator ends quietly at a read error (EIO), and a file cut short that way
  // would be taken for a truncated checkpoint.
  Fd in{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  ENGINE_CHECK(in.fd >= 0, "cannot open checkpoint '{}': {}", path, std::strerror(errno));
  std::vector<std::uint8_t> bytes;
  const std::uintmax_t size_hint = std::filesystem::file_size(path, ec);
  if (!ec) bytes.reserve(static_cast<std::size_t>(size_hint));
  std::vector<std::uint8_t> chunk(kReadChunkBytes);
  for (;;) {
    const ssize_t n = ::read(in.fd, chunk.data(), chunk.size());
    if (n < 0 && errno == EINTR) continue;
    ENGINE_CHECK(n >= 0, "cannot read checkpoint '{}' after {} bytes: {}", path, bytes.size(),
                 std::strerror(errno));
    if (n == 0) break;
    bytes.insert(bytes.end(), chunk.begin(), chunk.begin() + n);
  }
  return parse(std::move(bytes), path);
}

SafetensorsFile SafetensorsFile::parse(std::vector<std::uint8_t> bytes, const std::string& source) {
  SafetensorsFile f;
  f.source_ = source;
  f.file_ = std::move(bytes);
  const std::size_t size = f.file_.size();
  ENGINE_CHECK(size >= 8, "checkpoint '{}' is truncated: {} bytes, not even the 8-byte header length", source,
               size);
  std::uint64_t header_len = 0;
  std::memcpy(&header_len, f.file_.data(), 8);
  // An ONNX file (a ModelProto begins with its ir_version field, tag byte 0x08) given where a checkpoint
  // goes.
  ENGINE_CHECK(
      (header_len >= 2 && header_len <= kMaxHeaderBytes) || f.file_[0] != 0x08,
      "'{}' is not a checkpoint (an ONNX file?): a checkpoint is the .safetensors file cnn_train writes",
      source);
  ENGINE_CHECK(
      header_len >= 2 && header_len <= kMaxHeaderBytes,
      "checkpoint '{}' has a corrupt header: header length {} (a JSON header of 2 to {} bytes expected)",
      source, header_len, kMaxHeaderBytes);
  ENGINE_CHECK(
      header_len <= size - 8,
      "checkpoint '{}' is truncated or corrupt: the header claims {} bytes, the file has {} after the length",
      source, header_len, size - 8);
  f.data_start_ = 8 + static_cast<std::size_t>(header_len);
  const std::size_t data_size = size - f.data_start_;

  nlohmann::json header;
  try {
    header = nlohmann::json::parse(f.file_.begin() + 8,
                                   f.file_.begin() + static_cast<std::ptrdiff_t>(f.data_start_));
  } catch (const nlohmann::json::exception& e) {
    ENGINE_FAIL("checkpoint '{}' has a corrupt header (not JSON): {}", source, e.what());
  }
  ENGINE_CHECK(header.is_object(), "checkpoint '{}' has a corrupt header: not a JSON object", source);

  std::vector<std::pair<std::string, Entry>> ordered;
  for (const auto& [name, value] : header.items()) {
    if (name == "__metadata__") {
      ENGINE_CHECK(value.is_object(), "checkpoint '{}': __metadata__ is not an object", source);
      for (const auto& [k, v] : value.items()) {
        ENGINE_CHECK(v.is_string(), "checkpoint '{}': __metadata__ '{}' is not a string", source, k);
        f.metadata_[k] = v.get<std::string>();
      }
      continue;
    }
    ENGINE_CHECK(value.is_object() && value.contains("dtype") && value.contains("shape") &&
                     value.contains("data_offsets"),
                 "checkpoint '{}': tensor '{}' lacks dtype, shape or data_offsets", source, name);
    const auto& dtype = value["dtype"];
    const auto& shape = value["shape"];
    const auto& offsets = value["data_offsets"];
    ENGINE_CHECK(dtype.is_string() && safetensors_dtype_size(dtype.get<std::string>()) > 0,
                 "checkpoint '{}': tensor '{}' has an unknown dtype {}", source, name, dtype.dump());
    ENGINE_CHECK(shape.is_array() && offsets.is_array() && offsets.size() == 2,
                 "checkpoint '{}': tensor '{}' has a malformed shape or data_offsets", source, name);
    Entry e;
    e.dtype = dtype.get<std::string>();
    std::uint64_t numel = 1;
    for (const auto& d : shape) {
      ENGINE_CHECK(d.is_number_unsigned() && d.get<std::uint64_t>() < (std::uint64_t{1} << 40),
                   "checkpoint '{}': tensor '{}' has a bad shape {}", source, name, shape.dump());
      numel *= d.get<std::uint64_t>();
      ENGINE_CHECK(numel < (std::uint64_t{1} << 40), "checkpoint '{}': tensor '{}' is too large: {}", source,
                   name, shape.dump());
      e.shape.push_back(d.get<std::int64_t>());
    }
    ENGINE_CHECK(offsets[0].is_number_unsigned() && offsets[1].is_number_unsigned(),
                 "checkpoint '{}': tensor '{}' has bad data_offsets {}", source, name, offsets.dump());
    const std::uint64_t begin = offsets[0].get<std::uint64_t>(), end = offsets[1].get<std::uint64_t>();
    ENGINE_CHECK(
        begin <= end && end <= data_size,
        "checkpoint '{}': tensor '{}' data_offsets [{}, {}] out of range: the data block has {} bytes "
        "(truncated file?)",
        source, name, begin, end, data_size);
    ENGINE_CHECK(end - begin == numel * safetensors_dtype_size(e.dtype),
                 "checkpoint '{}': tensor '{}' {} {} needs {} bytes, data_offsets [{}, {}] give {}", source,
                 name, e.dtype, shape_str(e.shape), numel * safetensors_dtype_size(e.dtype), begin, end,
                 end - begin);
    e.begin = static_cast<std::size_t>(begin);
    e.end = static_cast<std::size_t>(end);
    ordered.emplace_back(name, e);
  }
  std::sort(ordered.begin(), ordered.end(), [](const auto& a, const auto& b) {
    return std::pair(a.second.begin, a.second.end) < std::pair(b.second.begin, b.second.end);
  });
  std::size_t expected = 0;
  for (const auto& [name, e] : ordered) {
    ENGINE_CHECK(
        e.begin == expected,
        "checkpoint '{}': tensor '{}' data_offsets [{}, {}] {} the previous tensor (which ends at {})",
        source, name, e.begin, e.end, e.begin < expected ? "overlap" : "leave a hole after", expected);
    expected = e.end;
  }
  ENGINE_CHECK(expected == data_size, "checkpoint '{}': the tensors cover {} bytes of a {}-byte data block",
               source, expected, data_size);
  for (auto& [name, e] : ordered) f.entries_.emplace(std::move(name), std::move(e));
  return f;
}

const SafetensorsFile::Entry* SafetensorsFile::find(const std::string& name) const {
  const auto it = entries_.find(name);
  return it == entries_.end() ? nullptr : &it->second;
}

std::span<const std::uint8_t> SafetensorsFile::bytes(const Entry& entry) const {
  return {file_.data() + data_start_ + entry.begin, entry.end - entry.begin};
}

}  // namespace engine::optim
