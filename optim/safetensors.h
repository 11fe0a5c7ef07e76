#pragma once
// The safetensors file format (https://github.com/huggingface/safetensors), read and written without PyTorch:
//
//   [8 bytes: N, the header length, unsigned little-endian]
//   [N bytes: a JSON object, padded at its end with spaces so that 8 + N is a multiple of 8]
//     { "__metadata__": {"key": "string value", ...},                               (optional)
//       "name": {"dtype": "F32", "shape": [64, 1, 3, 3], "data_offsets": [begin, end]}, ... }
//   [the data: every tensor's raw little-endian bytes, row-major, at [begin, end) of this block]
//
// Reading validates what safetensors itself validates, so a file we accept is one safetensors.torch accepts:
// the header length fits in the file; the JSON parses; every entry has a known dtype, a shape of non-negative
// sizes and offsets with end - begin = numel * dtype size; the tensors tile the data block exactly (sorted by
// begin, each begins where the previous ended, the last ends at the end of the file: no overlap, no hole, no
// trailing or missing bytes). Every failure is an engine::Error naming the file and, where one is at fault,
// the tensor.
//
// Writing is crash-safe: the bytes go to "<path>.tmp-<pid>" in the same folder, which is flushed (fsync) and
// then renamed over `path` (and the folder is fsync'd), so a process killed during a save leaves the previous
// file at `path` complete and loadable.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace engine::optim {

// The element size of a safetensors dtype ("F32" 4, "I64" 8, "BOOL" 1, ...); 0 for a name it does not define.
std::size_t safetensors_dtype_size(const std::string& dtype);

struct TensorRecord {
  std::string name;
  std::string dtype;  // "F32", "F64", "I64", ...
  Shape shape;        // [] for a 0-dim tensor
  std::span<const std::uint8_t> bytes;
};

struct WriteOptions {
  // Called after each chunk of the temporary file is written, with the bytes written so far: tests use it to
  // kill the process in the middle of a save.
  std::function<void(std::size_t bytes_written)> after_chunk;
};

// Writes `tensors` (in this order) and `metadata` to `path` as described above. Throws engine::Error naming
// the path when it cannot be written, or a record whose bytes do not match its dtype and shape.
void write_safetensors(const std::string& path, const std::vector<TensorRecord>& tensors,
                       const std::map<std::string, std::string>& metadata, const WriteOptions& options = {});

class SafetensorsFile {
 public:
  struct Entry {
    std::string dtype;
    Shape shape;
    std::size_t begin = 0, end = 0;  // in the data block
  };

  // Reads and validates the whole file. Throws engine::Error naming the path for a missing or unreadable file
  // and for every structural problem listed above.
  static SafetensorsFile read(const std::string& path);
  // The same on bytes already in memory; `source` names them in messages.
  static SafetensorsFile parse(std::vector<std::uint8_t> bytes, const std::string& source);

  const std::string& source() const { return source_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const std::map<std::string, Entry>& entries() const { return entries_; }
  const Entry* find(const std::string& name) const;  // nullptr when absent
  std::span<const std::uint8_t> bytes(const Entry& entry) const;
  // The data block: every tensor's bytes, in file order.
  std::span<const std::uint8_t> data() const {
    return {file_.data() + data_start_, file_.size() - data_start_};
  }

 private:
  std::string source_;
  std::vector<std::uint8_t> file_;
  std::size_t data_start_ = 0;
  std::map<std::string, std::string> metadata_;
  std::map<std::string, Entry> entries_;
};

}  // namespace engine::optim
