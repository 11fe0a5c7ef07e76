#include "data/jpeg_decoder.h"

#include <memory>
#include <turbojpeg.h>

#include "core/error.h"

namespace engine::data {
namespace {

struct TjDestroy {
  void operator()(void* handle) const { tjDestroy(handle); }
};
using TjHandle = std::unique_ptr<void, TjDestroy>;

// One decompressor per thread, kept: starting one allocates, and the loader's workers decode thousands.
void* decompressor(const std::string& source) {
  thread_local TjHandle handle(tjInitDecompress());
  ENGINE_CHECK(handle != nullptr, "{}: cannot start the JPEG decoder: {}", source, tjGetErrorStr2(nullptr));
  return handle.get();
}

}  // namespace

JpegHeader jpeg_header(std::span<const std::uint8_t> bytes, const std::string& source) {
  void* const handle = decompressor(source);
  int width = 0, height = 0, subsampling = 0, colorspace = 0;
  ENGINE_CHECK(tjDecompressHeader3(handle, bytes.data(), bytes.size(), &width, &height, &subsampling,
                                   &colorspace) == 0,
               "{}: corrupt or truncated JPEG header ({})", source, tjGetErrorStr2(handle));
  ENGINE_CHECK(width > 0 && height > 0, "{}: JPEG header declares {}x{} pixels", source, width, height);
  return {colorspace == TJCS_GRAY ? 1 : 3, height, width};
}

std::vector<std::uint8_t> decode_jpeg(std::span<const std::uint8_t> bytes, const std::string& source,
                                      int channels, const JpegHeader& header, int denominator) {
  ENGINE_CHECK(channels == 1 || channels == 3 || channels == 4, "{}: cannot decode a JPEG to {} channels",
               source, channels);
  const int format = channels == 1 ? TJPF_GRAY : channels == 3 ? TJPF_RGB : TJPF_RGBA;
  ENGINE_CHECK(denominator == 1 || denominator == 2 || denominator == 4 || denominator == 8,
               "{}: cannot decode a JPEG at 1/{} scale", source, denominator);
  const int height = (header.height + denominator - 1) / denominator;  // TJSCALED
  const int width = (header.width + denominator - 1) / denominator;
  std::vector<std::uint8_t> pixels(static_cast<std::size_t>(height) * static_cast<std::size_t>(width) *
                                   static_cast<std::size_t>(channels));
  void* const handle = decompressor(source);
  // STOPONWARNING: corrupt or early-ending entropy-coded data is a warning to libjpeg, which would fill the
  // rest with grey; LIMITSCANS: a progressive JPEG of thousands of tiny scans (a decoding-time bomb) is
  // refused.
  const int flags = TJFLAG_STOPONWARNING | TJFLAG_LIMITSCANS | TJFLAG_ACCURATEDCT;
  ENGINE_CHECK(
      tjDecompress2(handle, bytes.data(), bytes.size(), pixels.data(), width, 0, height, format, flags) == 0,
      "{}: cannot decode JPEG: {}", source, tjGetErrorStr2(handle));
  return pixels;
}

}  // namespace engine::data
