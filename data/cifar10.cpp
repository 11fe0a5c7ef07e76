#include "data/cifar10.h"

#include <cstdlib>
#include <filesystem>
#include <string_view>

#include "core/error.h"
#include "data/data_home.h"
#include "data/file_io.h"
#include "data/gzip.h"
#include "data/tar.h"

namespace engine::data {
namespace {

namespace fs = std::filesystem;

constexpr std::int64_t kSide = 32;
constexpr std::int64_t kImageBytes = 3 * kSide * kSide;
constexpr std::int64_t kRecordsPerBatch = 10000;
constexpr const char* kBatchesDir = "cifar-10-batches-bin";
constexpr const char* kTarball = "cifar-10-binary.tar.gz";
constexpr const char* kMetaFile = "batches.meta.txt";

std::vector<std::string> batch_names(Split split) {
  if (split == Split::Test) return {"test_batch.bin"};
  return {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin", "data_batch_5.bin"};
}

Dataset empty_cifar10() {
  Dataset d;
  d.channels = 3;
  d.height = kSide;
  d.width = kSide;
  d.class_names = cifar10_class_names();
  return d;
}

std::string_view as_text(std::span<const std::uint8_t> bytes) {
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

std::string base_name(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// The folder of batches: `root` itself when it holds a batch file, else root/cifar-10-batches-bin.
Dataset load_from_folder(const fs::path& dir, Split split) {
  Dataset d = empty_cifar10();
  const auto names = batch_names(split);
  d.images.reserve(names.size() * kRecordsPerBatch * kImageBytes);  // a hint: the official sizes
  d.labels.reserve(names.size() * kRecordsPerBatch);
  for (const auto& name : names) {
    const fs::path raw = dir / name;
    const fs::path gz = dir / (name + ".gz");
    std::error_code ec;
    const fs::path& chosen = !fs::exists(raw, ec) && fs::exists(gz, ec) ? gz : raw;
    ENGINE_CHECK(fs::exists(chosen, ec), "CIFAR-10: no {} or {}.gz in {}", name, name, dir.string());
    const std::string path = chosen.string();
    append_cifar10_batch(read_file_maybe_gzip(path), path, d);
  }
  const fs::path meta = dir / kMetaFile;
  if (fs::exists(meta)) {
    const auto text = read_file(meta.string());
    d.class_names = parse_cifar10_meta(as_text(text), meta.string());
  }
  validate(d, dir.string());
  return d;
}

Dataset load_from_tarball(const std::string& path, Split split) {
  // A ".gz" name must be gzip; an uncompressed .tar is read as it is. The compressed bytes are freed before
  // the records are copied out: peak memory ~ the tar (185 MB) plus the split.
  const std::vector<std::uint8_t> tar = read_file_maybe_gzip(path);
  return decode_cifar10_tar(tar, path, split);
}

}  // namespace

const std::vector<std::string>& cifar10_class_names() {
  static const std::vector<std::string> names = {"airplane", "automobile", "bird",  "cat",  "deer",
                                                 "dog",      "frog",       "horse", "ship", "truck"};
  return names;
}

std::string default_cifar10_root() {
  const char* env = std::getenv("CIFAR10_DIR");
  return env && *env ? std::string(env) : user_data_dir("cifar10");
}

void append_cifar10_batch(std::span<const std::uint8_t> bytes, const std::string& source, Dataset& out) {
  ENGINE_CHECK(!bytes.empty(), "{}: empty CIFAR-10 batch (0 bytes), expected records of {} bytes", source,
               kCifar10RecordBytes);
  const auto size = static_cast<std::int64_t>(bytes.size());
  ENGINE_CHECK(size % kCifar10RecordBytes == 0,
               "{}: size {} bytes is not a multiple of the {}-byte CIFAR-10 record ({} records and {} bytes "
               "left over)",
               source, size, kCifar10RecordBytes, size / kCifar10RecordBytes, size % kCifar10RecordBytes);
  ENGINE_CHECK(out.size() == 0 || (out.channels == 3 && out.height == kSide && out.width == kSide),
               "{}: appending CIFAR-10 records to a dataset of {}x{}x{} images", source, out.channels,
               out.height, out.width);
  const std::int64_t n = size / kCifar10RecordBytes;
  // Check every label before touching `out`, so a bad batch leaves it unchanged.
  for (std::int64_t i = 0; i < n; ++i) {
    const std::uint8_t label = bytes[static_cast<std::size_t>(i * kCifar10RecordBytes)];
    ENGINE_CHECK(label <= 9, "{}: record {} (byte offset {}) has label {}, outside 0..9", source, i,
                 i * kCifar10RecordBytes, label);
  }
  out.channels = 3;
  out.height = kSide;
  out.width = kSide;
  if (out.class_names.empty()) out.class_names = cifar10_class_names();
  out.images.reserve(out.images.size() + static_cast<std::size_t>(n * kImageBytes));
  out.labels.reserve(out.labels.size() + static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    const std::uint8_t* record = bytes.data() + i * kCifar10RecordBytes;
    out.labels.push_back(record[0]);
    out.images.insert(out.images.end(), record + 1, record + kCifar10RecordBytes);
  }
}

Dataset decode_cifar10_batch(std::span<const std::uint8_t> bytes, const std::string& source) {
  Dataset d = empty_cifar10();
  append_cifar10_batch(bytes, source, d);
  validate(d, source);
  return d;
}

Dataset decode_cifar10_tar(std::span<const std::uint8_t> tar_bytes, const std::string& source, Split split) {
  // An empty file (a --data-dir that names a file by mistake) would read as an archive without the batches.
  ENGINE_CHECK(!tar_bytes.empty(), "{}: empty file: expected a folder of CIFAR-10 batches or {}", source,
               kTarball);
  const auto members = list_tar(tar_bytes, source);
  auto find = [&](const std::string& name) -> const TarMember* {
    for (const auto& m : members) {
      if (base_name(m.name) == name) return &m;
    }
    return nullptr;
  };
  Dataset d = empty_cifar10();
  for (const auto& name : batch_names(split)) {
    const TarMember* m = find(name);
    if (m == nullptr) m = find(name + ".gz");
    ENGINE_CHECK(m != nullptr, "{}: no {} inside the archive (expected {}/{})", source, name, kBatchesDir,
                 name);
    const std::string member_source = source + ":" + m->name;
    if (m->name.ends_with(".gz") || is_gzip(m->data)) {
      append_cifar10_batch(gunzip(m->data, member_source), member_source, d);
    } else {
      append_cifar10_batch(m->data, member_source, d);
    }
  }
  if (const TarMember* meta = find(kMetaFile)) {
    d.class_names = parse_cifar10_meta(as_text(meta->data), source + ":" + meta->name);
  }
  validate(d, source);
  return d;
}

std::vector<std::string> parse_cifar10_meta(std::string_view text, const std::string& source) {
  std::vector<std::string> names;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) {
      line.remove_suffix(1);
    }
    if (!line.empty()) names.emplace_back(line);
    pos = end + 1;
  }
  ENGINE_CHECK(names.size() == 10, "{}: {} class names, expected 10 (one per line)", source, names.size());
  return names;
}

Dataset load_cifar10(const std::string& root_in, Split split) {
  const std::string root = root_in.empty() ? default_cifar10_root() : root_in;
  std::error_code ec;
  ENGINE_CHECK(fs::exists(root, ec),
               "CIFAR-10: {} does not exist (expected {}, a folder containing it, or {}; "
               "scripts/download-data.sh cifar10 downloads it)",
               root, kBatchesDir, kTarball);
  if (!fs::is_directory(root, ec)) return load_from_tarball(root, split);

  const fs::path dir(root);
  const std::string first = batch_names(split).front();
  auto has_batch = [&](const fs::path& d) {
    return fs::exists(d / first, ec) || fs::exists(d / (first + ".gz"), ec);
  };
  if (has_batch(dir)) return load_from_folder(dir, split);
  if (fs::is_directory(dir / kBatchesDir, ec)) return load_from_folder(dir / kBatchesDir, split);
  if (fs::exists(dir / kTarball, ec)) return load_from_tarball((dir / kTarball).string(), split);
  ENGINE_FAIL(
      "CIFAR-10: {} holds neither {}[.gz], a {} folder, nor {} (scripts/download-data.sh cifar10 "
      "downloads it)",
      root, first, kBatchesDir, kTarball);
}

}  // namespace engine::data
