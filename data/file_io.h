#pragma once
// Whole-file reads for the dataset readers, with every failure named: a missing path, a directory where a
// file is expected, a file that cannot be opened or read.
//
// The readers are split into "file -> bytes" (here and in data/gzip.h) and "bytes -> Dataset" (the decode_*
// functions), so that the fuzzers in tests/fuzz/ run the same parsing code without touching the disk.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace engine::data {

// The bytes of the file at `path`. Throws engine::Error naming the path when it does not exist, is a
// directory or another non-regular file (a FIFO would block), cannot be opened (with the reason), or a read
// fails. max_bytes: at most that many from the start (a header), fewer when the file is shorter.
std::vector<std::uint8_t> read_file(const std::string& path, std::size_t max_bytes = SIZE_MAX);

// The bytes of `path`, gunzipped when they start with the gzip magic. A path ending in ".gz" must be gzip:
// one that is not gets an engine::Error rather than being silently read raw.
std::vector<std::uint8_t> read_file_maybe_gzip(const std::string& path);

// True when `path` names an existing regular file (symlinks followed); never throws.
bool is_regular_file(const std::string& path);

}  // namespace engine::data
