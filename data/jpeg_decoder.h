#pragma once
// JPEG decoding with libjpeg-turbo's TurboJPEG API (Debian libturbojpeg0-dev), used by data/image_codec.cpp
// instead of stb_image: Debian bookworm's stb_image 2.27 reads out of bounds in its Huffman decoder when a
// scan's data ends early (upstream nothings/stb#1293, found by tests/fuzz/fuzz_image), and libjpeg-turbo is
// the decoder the image libraries of the Python ecosystem use, fuzzed continuously by OSS-Fuzz.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace engine::data {

struct JpegHeader {
  int channels = 0;  // 1 for a greyscale JPEG, 3 for colour (YCbCr, RGB, CMYK, YCCK), as stb reported
  int height = 0;
  int width = 0;
};

// The header of a JPEG; throws engine::Error naming `source` when libjpeg-turbo refuses it.
JpegHeader jpeg_header(std::span<const std::uint8_t> bytes, const std::string& source);

// Decodes to `channels` (1 grey, 3 RGB, 4 RGBA with alpha 255) interleaved bytes, height x width x channels.
// Any warning (corrupt or early-ending data) is an error: a picture with invented pixels is never returned.
// denominator 2, 4 or 8: decoded at that fraction of the size in the DCT domain (ceil(side / denominator)).
std::vector<std::uint8_t> decode_jpeg(std::span<const std::uint8_t> bytes, const std::string& source,
                                      int channels, const JpegHeader& header, int denominator = 1);

}  // namespace engine::data
