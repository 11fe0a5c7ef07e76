#pragma once
// CIFAR-10, binary version: 60,000 32x32 RGB images in 10 classes (50,000 train in data_batch_1..5.bin,
// 10,000 test in test_batch.bin). Each record is 3073 bytes: the label byte (0..9), then 1024 R, 1024 G and
// 1024 B bytes, each plane row-major. That is already the Dataset's C x H x W layout, so records are copied
// as they are.
//
// Accepted roots (each batch may be a raw ".bin" or a gzipped ".bin.gz"):
//   - the folder "cifar-10-batches-bin" itself, or a folder containing it;
//   - the official "cifar-10-binary.tar.gz", or a folder containing it (what scripts/download-data.sh
//   leaves).
// An empty root means default_cifar10_root().

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "data/split.h"

namespace engine::data {

inline constexpr std::int64_t kCifar10RecordBytes = 3073;

// The official class names, in label order (airplane ... truck).
const std::vector<std::string>& cifar10_class_names();

// $CIFAR10_DIR when set, else user_data_dir("cifar10") (data/data_home.h: ~/.cache/cnn_engine/cifar10).
std::string default_cifar10_root();

// Reads the split from `root` (see above). Throws engine::Error naming the file and the problem for a missing
// batch, a size that is not a positive multiple of 3073, a label outside 0..9 (with the record index), a
// truncated or non-gzip ".gz", or a bad batches.meta.txt. Never returns a partial dataset.
Dataset load_cifar10(const std::string& root, Split split);

// --- The in-memory layer the loader is built on (and the fuzzers call) ---

// Appends the records of one batch file's bytes to `out` (which must be empty or hold 3x32x32 images).
// `source` names the bytes in messages.
void append_cifar10_batch(std::span<const std::uint8_t> bytes, const std::string& source, Dataset& out);

// One batch as a complete Dataset with the official class names.
Dataset decode_cifar10_batch(std::span<const std::uint8_t> bytes, const std::string& source);

// The split read from the (already decompressed) bytes of cifar-10-binary.tar.
Dataset decode_cifar10_tar(std::span<const std::uint8_t> tar_bytes, const std::string& source, Split split);

// Class names from the text of batches.meta.txt: one per line, blank lines ignored; there must be 10.
std::vector<std::string> parse_cifar10_meta(std::string_view text, const std::string& source);

}  // namespace engine::data
