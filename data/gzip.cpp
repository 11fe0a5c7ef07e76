#include "data/gzip.h"

#include <algorithm>

#include <climits>
#include <zlib.h>

#include "core/error.h"

namespace engine::data {
namespace {

// Ends the inflate state on every path out, including exceptions.
struct Inflater {
  z_stream zs{};
  Inflater() {
    const int rc = inflateInit2(&zs, 16 + MAX_WBITS);  // 16: expect a gzip header and trailer
    ENGINE_CHECK(rc == Z_OK, "zlib inflateInit2 failed ({})", rc);
  }
  ~Inflater() { inflateEnd(&zs); }
  Inflater(const Inflater&) = delete;
  Inflater& operator=(const Inflater&) = delete;
};

}  // namespace

bool is_gzip(std::span<const std::uint8_t> bytes) {
  return bytes.size() >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b;
}

std::vector<std::uint8_t> gunzip(std::span<const std::uint8_t> bytes, const std::string& source,
                                 std::size_t max_output) {
  ENGINE_CHECK(!bytes.empty(), "{}: is empty (0 bytes), expected gzip data", source);
  ENGINE_CHECK(is_gzip(bytes), "{}: not gzip data (starts with {:02x} {:02x}, expected 1f 8b)", source,
               bytes[0], bytes.size() > 1 ? bytes[1] : 0);

  // The last 4 bytes hold the uncompressed size mod 2^32: a good first guess for the output buffer, capped so
  // that a forged trailer cannot make us allocate much more than the input could plausibly produce.
  std::size_t guess = bytes.size() * 4;
  if (bytes.size() >= 18) {
    const std::uint8_t* t = bytes.data() + bytes.size() - 4;
    const std::size_t isize =
        std::size_t{t[0]} | std::size_t{t[1]} << 8 | std::size_t{t[2]} << 16 | std::size_t{t[3]} << 24;
    guess = std::max(isize, std::size_t{1024});
  }
  guess = std::min({guess, bytes.size() * 1032 + 1024, max_output});  // deflate expands at most ~1032x
  std::vector<std::uint8_t> out(std::max(guess, std::size_t{1}));

  Inflater inflater;
  z_stream& zs = inflater.zs;
  std::size_t in_pos = 0;
  std::size_t out_pos = 0;
  for (;;) {
    if (out_pos == out.size()) {
      ENGINE_CHECK(out.size() < max_output, "{}: decompresses to more than {} bytes; refusing", source,
                   max_output);
      out.resize(std::min(out.size() * 2, max_output));
    }
    const std::size_t in_chunk = std::min<std::size_t>(bytes.size() - in_pos, UINT_MAX);
    const std::size_t out_chunk = std::min<std::size_t>(out.size() - out_pos, UINT_MAX);
    // zlib's API takes a non-const pointer for input it never writes.
    zs.next_in = const_cast<Bytef*>(bytes.data() + in_pos);
    zs.avail_in = static_cast<uInt>(in_chunk);
    zs.next_out = out.data() + out_pos;
    zs.avail_out = static_cast<uInt>(out_chunk);
    const int rc = inflate(&zs, Z_NO_FLUSH);
    in_pos += in_chunk - zs.avail_in;
    out_pos += out_chunk - zs.avail_out;

    if (rc == Z_STREAM_END) {
      const auto rest = bytes.subspan(in_pos);
      if (rest.empty()) break;
      if (is_gzip(rest)) {  // another member follows
        ENGINE_CHECK(inflateReset(&zs) == Z_OK, "{}: zlib inflateReset failed", source);
        continue;
      }
      const bool zero_padding = std::all_of(rest.begin(), rest.end(), [](std::uint8_t b) { return b == 0; });
      ENGINE_CHECK(zero_padding, "{}: {} bytes of trailing data after the gzip stream (at offset {})", source,
                   rest.size(), in_pos);
      break;
    }
    if (rc == Z_DATA_ERROR) {
      ENGINE_FAIL("{}: corrupt gzip data at compressed offset {}: {}", source, in_pos,
                  zs.msg ? zs.msg : "invalid deflate stream");
    }
    ENGINE_CHECK(rc != Z_MEM_ERROR, "{}: zlib ran out of memory", source);
    // Z_OK or Z_BUF_ERROR: progress is possible only with more output space or more input.
    const bool input_left = in_pos < bytes.size();
    const bool made_progress = in_chunk != zs.avail_in || out_chunk != zs.avail_out;
    ENGINE_CHECK(input_left || out_pos == out.size() || made_progress,
                 "{}: truncated gzip stream: the compressed data ends after {} bytes ({} bytes decompressed) "
                 "before the end of the stream",
                 source, bytes.size(), out_pos);
    ENGINE_CHECK(rc == Z_OK || rc == Z_BUF_ERROR, "{}: zlib inflate failed ({})", source, rc);
  }
  out.resize(out_pos);
  out.shrink_to_fit();
  return out;
}

std::vector<std::uint8_t> gzip_compress(std::span<const std::uint8_t> bytes, int level) {
  ENGINE_CHECK(level >= 0 && level <= 9, "gzip_compress: level {} is outside 0..9", level);
  ENGINE_CHECK(bytes.size() < UINT_MAX, "gzip_compress: {} bytes is more than one call handles",
               bytes.size());
  z_stream zs{};
  ENGINE_CHECK(deflateInit2(&zs, level, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) == Z_OK,
               "zlib deflateInit2 failed");
  std::vector<std::uint8_t> out(deflateBound(&zs, static_cast<uLong>(bytes.size())) + 64);
  zs.next_in = const_cast<Bytef*>(bytes.data());
  zs.avail_in = static_cast<uInt>(bytes.size());
  zs.next_out = out.data();
  zs.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  ENGINE_CHECK(rc == Z_STREAM_END, "gzip_compress: zlib deflate failed ({})", rc);
  return out;
}

}  // namespace engine::data
