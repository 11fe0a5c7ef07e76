#pragma once
// gzip decompression from memory with zlib's inflate.
//
// Why inflate on bytes rather than gzopen/gzread on a path: the same function then serves the file readers
// and the fuzzers (which must not touch the disk), and nothing is lost: a stream that stops before its end
// (truncated), data that is not gzip, and a corrupt stream (bad CRC, bad deflate data) each give an
// engine::Error naming the source. gzread would also read non-gzip data through silently ("transparent"
// mode), which a reader of "x.bin.gz" must not do.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace engine::data {

// The gzip magic 1f 8b.
bool is_gzip(std::span<const std::uint8_t> bytes);

// Default cap on the decompressed size: far above any dataset file here (CIFAR-10's tarball is 185 MB), low
// enough that a "zip bomb" fails cleanly instead of exhausting memory.
inline constexpr std::size_t kMaxGunzipBytes = std::size_t{8} << 30;

// Decompresses a gzip file (several concatenated members are one stream, as gzip(1) reads them; trailing zero
// padding is ignored). Throws engine::Error naming `source` when the bytes are not gzip, are truncated or
// corrupt, have other trailing data, or would decompress to more than `max_output` bytes.
std::vector<std::uint8_t> gunzip(std::span<const std::uint8_t> bytes, const std::string& source,
                                 std::size_t max_output = kMaxGunzipBytes);

// gzip-compresses `bytes` at zlib `level` (0..9): what tests and fuzz seeds use to make ".gz" inputs.
std::vector<std::uint8_t> gzip_compress(std::span<const std::uint8_t> bytes, int level = 6);

}  // namespace engine::data
