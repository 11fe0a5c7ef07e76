#pragma once
// One image in memory (C x H x W bytes, the Dataset layout) and its conversion from and to PNG/JPEG/BMP
// bytes, with stb_image (PNG, BMP), libjpeg-turbo (JPEG: data/jpeg_decoder.h), stb_image_resize and
// stb_image_write (stb compiled once, in data/stb_image_impl.cpp).
//
// Decoding converts to the requested channel count (1: luminance, 3: RGB, 4: RGBA; the decoder's) and,
// when a size is given, resizes with a triangle filter (bilinear when upsampling, area-weighted when
// downsampling, edges clamped, no gamma). Only PNG, JPEG and BMP are accepted, recognised by their signature
// bytes; truncated files are rejected even where stb would fill the missing pixels with zeros.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace engine::data {

struct Image {
  std::int64_t channels = 0;
  std::int64_t height = 0;
  std::int64_t width = 0;
  std::vector<std::uint8_t> pixels;  // channels x height x width, row-major
};

// Decodes `bytes` (named `source` in messages) to `channels` channels (1, 3 or 4). height/width > 0 resize to
// that size; both 0 keep the file's size. Throws engine::Error naming the source for empty bytes, an unknown
// format, a truncated or corrupt file, dimensions past 16384 a side, or more than `max_pixels` pixels (the
// default, 8192 x 8192, refuses forged headers; the fuzzers pass less so each input decodes quickly).
inline constexpr std::int64_t kMaxImagePixels = std::int64_t{1} << 26;
Image decode_image(std::span<const std::uint8_t> bytes, const std::string& source, int channels,
                   std::int64_t height = 0, std::int64_t width = 0,
                   std::int64_t max_pixels = kMaxImagePixels);

// The decoded pixels as the decoder gives them: height x width x channels, interleaved, no resize. A JPEG is
// decoded at 1/`denominator` of its size (1, 2, 4 or 8: libjpeg-turbo's scaling in the DCT domain, much
// faster than decoding whole and shrinking); other formats ignore it. full_height/full_width: the file's
// size.
struct InterleavedImage {
  int channels = 0;
  std::int64_t height = 0, width = 0;
  std::int64_t full_height = 0, full_width = 0;
  std::vector<std::uint8_t> pixels;
};
InterleavedImage decode_interleaved(std::span<const std::uint8_t> bytes, const std::string& source,
                                    int channels, int denominator = 1,
                                    std::int64_t max_pixels = kMaxImagePixels);

// What a file holds before any conversion: its size and stb's channel count (1 grey, 2 grey and alpha, 3 RGB,
// 4 RGBA). Throws engine::Error naming the source for what decode_image refuses at the header.
struct ImageInfo {
  int channels = 0;
  std::int64_t height = 0;
  std::int64_t width = 0;
};
ImageInfo image_info(std::span<const std::uint8_t> bytes, const std::string& source);

// decode_image on the bytes of `path` (errors for a missing, directory or unreadable path name it).
Image decode_image_file(const std::string& path, int channels, std::int64_t height = 0,
                        std::int64_t width = 0);

// Encodes an image (1, 2, 3 or 4 channels) as PNG or BMP bytes; throws engine::Error if stb fails.
std::vector<std::uint8_t> encode_png(const Image& image);
std::vector<std::uint8_t> encode_bmp(const Image& image);
std::vector<std::uint8_t> encode_jpeg(const Image& image, int quality = 90);  // lossy; 1, 3 or 4 channels

// encode_png written to `path`; throws engine::Error naming the path when it cannot be written.
void write_png(const std::string& path, const Image& image);

}  // namespace engine::data
