// Fuzzes image decoding (stb_image for PNG and BMP, libjpeg-turbo for JPEG, behind our signature, size and
// truncation checks): to 3 channels at the file's size, and to 1 channel resized to 7 x 5.

#include <cstdint>
#include <span>

#include "core/error.h"
#include "data/image_codec.h"

// 64 K pixels at most: a forged header of a few thousand pixels a side is legal but takes seconds to decode
// under ASan (libFuzzer would report a timeout), and at 1 MP the campaign ran ~130 executions/s, too few for
// a million; the size check itself is still exercised, and the decoders' loops are the same at any size.
constexpr std::int64_t kFuzzMaxPixels = std::int64_t{1} << 16;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::uint8_t> bytes(data, size);
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
