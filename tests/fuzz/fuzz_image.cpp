// Fuzzes image decoding (stb_image behind our signature, size and truncation checks): to 3 channels at the
// file's size, and to 1 channel resized to 7 x 5.

#include <cstdint>
#include <span>

#include "core/error.h"
#include "data/image_codec.h"

// 1 MP at most: a forged header of a few thousand pixels a side is legal but takes seconds to decode under
// ASan, which libFuzzer would report as a timeout; the size check itself is still exercised.
constexpr std::int64_t kFuzzMaxPixels = std::int64_t{1} << 20;

// JPEG is not fed to the decoder here, for now: Debian bookworm's stb_image (2.27) reads out of bounds in its
// Huffman decoder when a scan's entropy-coded data ends early (stbi__grow_buffer_unsafe leaves code_bits
// negative: a shift by 37, then an index of -436206972 into a 256-entry table; upstream nothings/stb#1293,
// fixed after that release), which no check of ours before the call can rule out. This target found it on
// 2026-11-26 (the input is kept in tests/fuzz/known_crashes/); the fix is to decode JPEG with libjpeg-turbo,
// after which this early return goes. PNG, BMP and the format detection stay fuzzed. The prefix is the one
// image_codec.cpp's detect_format takes for JPEG.
bool is_jpeg(std::span<const std::uint8_t> b) {
  return b.size() >= 3 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::uint8_t> bytes(data, size);
  if (is_jpeg(bytes)) return 0;
  try {
    const auto im = engine::data::decode_image(bytes, "fuzz.png", 3, 0, 0, kFuzzMaxPixels);
    if (im.pixels.size() != static_cast<std::size_t>(3 * im.height * im.width)) __builtin_trap();
  } catch (const engine::Error&) {
  }
  try {
    const auto im = engine::data::decode_image(bytes, "fuzz.png", 1, 7, 5, kFuzzMaxPixels);
    if (im.pixels.size() != 35) __builtin_trap();
  } catch (const engine::Error&) {
  }
  return 0;
}
