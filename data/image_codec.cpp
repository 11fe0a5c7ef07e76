#include "data/image_codec.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include <stb_image.h>
#include <stb_image_resize.h>
#include <stb_image_write.h>

#include "core/error.h"
#include "data/file_io.h"
#include "data/jpeg_decoder.h"

namespace engine::data {
namespace {

constexpr std::int64_t kMaxSide = 1 << 14;  // = STBI_MAX_DIMENSIONS in data/stb_image_impl.cpp, for JPEG too

enum class Format { Png, Jpeg, Bmp };

const char* format_name(Format f) { return f == Format::Png ? "PNG" : f == Format::Jpeg ? "JPEG" : "BMP"; }

bool starts_with(std::span<const std::uint8_t> b, std::initializer_list<std::uint8_t> sig) {
  return b.size() >= sig.size() && std::equal(sig.begin(), sig.end(), b.begin());
}

Format detect_format(std::span<const std::uint8_t> b, const std::string& source) {
  if (starts_with(b, {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'})) return Format::Png;
  if (starts_with(b, {0xff, 0xd8, 0xff})) return Format::Jpeg;
  if (starts_with(b, {'B', 'M'})) return Format::Bmp;
  std::string head;
  for (std::size_t i = 0; i < std::min<std::size_t>(b.size(), 4); ++i) head += fmt::format(" {:02x}", b[i]);
  ENGINE_FAIL("{}: not an image: {} bytes starting with{}, expected a PNG, JPEG or BMP signature", source,
              b.size(), head);
}

std::uint32_t le32(const std::uint8_t* p) {
  return std::uint32_t{p[0]} | std::uint32_t{p[1]} << 8 | std::uint32_t{p[2]} << 16 |
         std::uint32_t{p[3]} << 24;
}
std::uint32_t be32(const std::uint8_t* p) {
  return std::uint32_t{p[0]} << 24 | std::uint32_t{p[1]} << 16 | std::uint32_t{p[2]} << 8 |
         std::uint32_t{p[3]};
}

// A chunk type for a message: letters as they are, other bytes as '?'.
std::string printable(std::string text) {
  for (char& c : text) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '?';
  }
  return text;
}

std::uint16_t le16(const std::uint8_t* p) { return static_cast<std::uint16_t>(p[0] | p[1] << 8); }

// The file ends where its format says it does. stb_image reads past the end of JPEG and BMP data as zeros
// (a decoded picture with a grey or black bottom), so a truncated file must be caught here.
void check_complete(std::span<const std::uint8_t> b, Format format, const std::string& source) {
  const std::size_t n = b.size();
  if (format == Format::Png) {
    // Walk the chunks (length, type, data, CRC) up to IEND: every chunk must fit in the file. An empty IDAT
    // is refused too: stb_image 2.27 then calls memcpy with a null pointer (undefined behaviour, found by
    // tests/fuzz/fuzz_image), and no encoder writes one.
    std::size_t pos = 8;
    bool ended = false;
    while (!ended && n - pos >= 12) {
      const std::uint32_t length = be32(b.data() + pos);
      const std::string type(reinterpret_cast<const char*>(b.data() + pos + 4), 4);
      ENGINE_CHECK(length <= n - pos - 12,
                   "{}: truncated PNG: chunk {} at offset {} declares {} bytes, the file ends {} bytes later",
                   source, printable(type), pos, length, n - pos - 12);
      ENGINE_CHECK(!(type == "IDAT" && length == 0),
                   "{}: PNG with an empty IDAT chunk at offset {} (unsupported)", source, pos);
      ended = type == "IEND";
      pos += 12 + length;
    }
    ENGINE_CHECK(ended, "{}: truncated PNG: no IEND chunk in its {} bytes", source, n);
  } else if (format == Format::Jpeg) {
    // The end-of-image marker FF D9 must follow the last start-of-scan FF DA (entropy-coded data never holds
    // FF D9 or FF DA, an embedded thumbnail's markers come earlier).
    std::size_t last_sos = 0, last_eoi = 0;
    for (std::size_t i = 0; i + 1 < n; ++i) {
      if (b[i] != 0xff) continue;
      if (b[i + 1] == 0xda) last_sos = i;
      if (b[i + 1] == 0xd9) last_eoi = i;
    }
    ENGINE_CHECK(last_eoi > last_sos,
                 "{}: truncated JPEG: no end-of-image marker after the last scan ({} bytes)", source, n);
  } else {
    ENGINE_CHECK(n >= 26, "{}: truncated BMP: {} bytes, shorter than its headers", source, n);
    const std::uint32_t data_offset = le32(b.data() + 10);
    const std::uint32_t header_size = le32(b.data() + 14);
    std::int64_t width = 0, height = 0, bpp = 0, compression = 0;
    if (header_size == 12) {
      width = le16(b.data() + 18);
      height = le16(b.data() + 20);
      bpp = le16(b.data() + 24);
    } else {
      ENGINE_CHECK(n >= 34, "{}: truncated BMP: {} bytes, shorter than its headers", source, n);
      width = static_cast<std::int32_t>(le32(b.data() + 18));
      height = static_cast<std::int32_t>(le32(b.data() + 22));
      bpp = le16(b.data() + 28);
      compression = le32(b.data() + 30);
    }
    // Uncompressed (BI_RGB) and BI_BITFIELDS rows are padded to 4 bytes; RLE sizes are not known up front.
    if (compression == 0 || compression == 3) {
      const std::int64_t stride = (std::min(width, kMaxSide) * bpp + 31) / 32 * 4;
      const std::int64_t need = data_offset + stride * std::min(height < 0 ? -height : height, kMaxSide);
      ENGINE_CHECK(static_cast<std::int64_t>(n) >= need,
                   "{}: truncated BMP: {}x{} pixels at {} bits need {} bytes, the file has {}", source, width,
                   height, bpp, need, n);
    }
  }
}

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

struct StbiFree {
  void operator()(stbi_uc* p) const { stbi_image_free(p); }
};

// HWC -> CHW.
std::vector<std::uint8_t> planar(const std::uint8_t* hwc, std::int64_t h, std::int64_t w, std::int64_t c) {
  std::vector<std::uint8_t> out(static_cast<std::size_t>(h * w * c));
  for (std::int64_t ch = 0; ch < c; ++ch) {
    for (std::int64_t i = 0; i < h * w; ++i) out[static_cast<std::size_t>(ch * h * w + i)] = hwc[i * c + ch];
  }
  return out;
}

std::vector<std::uint8_t> interleaved(const Image& im) {
  const std::int64_t hw = im.height * im.width;
  std::vector<std::uint8_t> out(static_cast<std::size_t>(hw * im.channels));
  for (std::int64_t ch = 0; ch < im.channels; ++ch) {
    for (std::int64_t i = 0; i < hw; ++i) {
      out[static_cast<std::size_t>(i * im.channels + ch)] = im.pixels[static_cast<std::size_t>(ch * hw + i)];
    }
  }
  return out;
}

void check_encodable(const Image& im) {
  ENGINE_CHECK(im.channels >= 1 && im.channels <= 4 && im.height > 0 && im.width > 0 &&
                   im.height <= kMaxSide && im.width <= kMaxSide,
               "cannot encode an image of {}x{}x{}", im.channels, im.height, im.width);
  ENGINE_CHECK(im.pixels.size() == static_cast<std::size_t>(im.channels * im.height * im.width),
               "image of {}x{}x{} holds {} bytes", im.channels, im.height, im.width, im.pixels.size());
}

void append_bytes(void* context, void* data, int size) {
  auto* out = static_cast<std::vector<std::uint8_t>*>(context);
  const auto* p = static_cast<const std::uint8_t*>(data);
  out->insert(out->end(), p, p + size);
}

// PNG and BMP through stb_image, as interleaved bytes (JPEG goes to libjpeg-turbo: data/jpeg_decoder.h).
std::vector<std::uint8_t> decode_with_stb(std::span<const std::uint8_t> bytes, const std::string& source,
                                          Format format, int channels, int width, int height) {
  int w = 0, h = 0, file_channels = 0;
  std::unique_ptr<stbi_uc, StbiFree> decoded(
      stbi_load_from_memory(bytes.data(), static_cast<int>(bytes.size()), &w, &h, &file_channels, channels));
  ENGINE_CHECK(decoded != nullptr, "{}: cannot decode {}: {}", source, format_name(format),
               stbi_failure_reason());
  ENGINE_CHECK(w == width && h == height, "{}: decoded {} has size {}x{}, its header said {}x{}", source,
               format_name(format), w, h, width, height);
  const auto* first = decoded.get();
  return {first, first + static_cast<std::size_t>(w) * static_cast<std::size_t>(h) * channels};
}

}  // namespace

InterleavedImage decode_interleaved(std::span<const std::uint8_t> bytes, const std::string& source,
                                    int channels, int denominator, std::int64_t max_pixels) {
  ENGINE_CHECK(channels >= 1 && channels <= 4 && channels != 2,
               "{}: cannot decode to {} channels (1, 3 or 4)", source, channels);
  ENGINE_CHECK(denominator == 1 || denominator == 2 || denominator == 4 || denominator == 8,
               "{}: cannot decode at 1/{} scale", source, denominator);
  ENGINE_CHECK(!bytes.empty(), "{}: empty image file (0 bytes)", source);
  const Format format = detect_format(bytes, source);
  ENGINE_CHECK(bytes.size() <= static_cast<std::size_t>(INT32_MAX), "{}: {} bytes is too large for an image",
               source, bytes.size());
  const int len = static_cast<int>(bytes.size());

  // The file's size first (a forged header must not allocate), then its completeness, then the pixels.
  int w = 0, h = 0;
  if (format == Format::Jpeg) {
    const JpegHeader header = jpeg_header(bytes, source);
    w = header.width;
    h = header.height;
    ENGINE_CHECK(w <= kMaxSide && h <= kMaxSide, "{}: JPEG of {}x{} pixels: more than {} a side", source, w,
                 h, kMaxSide);
  } else {
    int file_channels = 0;
    ENGINE_CHECK(stbi_info_from_memory(bytes.data(), len, &w, &h, &file_channels),
                 "{}: corrupt or truncated {} header ({})", source, format_name(format),
                 stbi_failure_reason());
  }
  // stb's BMP header reader accepts a width of 0; resizing such a picture divides by zero (found by
  // fuzz_image).
  ENGINE_CHECK(w > 0 && h > 0, "{}: {} header declares {}x{} pixels", source, format_name(format), w, h);
  ENGINE_CHECK(std::int64_t{w} * h <= max_pixels,
               "{}: {} of {}x{} pixels is larger than the {} pixels allowed", source, format_name(format), w,
               h, max_pixels);
  check_complete(bytes, format, source);
  InterleavedImage out{channels, h, w, h, w, {}};
  if (format == Format::Jpeg) {
    out.height = (h + denominator - 1) / denominator;  // libjpeg-turbo's TJSCALED
    out.width = (w + denominator - 1) / denominator;
    out.pixels = decode_jpeg(bytes, source, channels, JpegHeader{0, h, w}, denominator);
  } else {
    out.pixels = decode_with_stb(bytes, source, format, channels, w, h);
  }
  return out;
}

Image decode_image(std::span<const std::uint8_t> bytes, const std::string& source, int channels,
                   std::int64_t height, std::int64_t width, std::int64_t max_pixels) {
  ENGINE_CHECK(
      (height == 0 && width == 0) || (height > 0 && width > 0 && height <= kMaxSide && width <= kMaxSide),
      "{}: cannot resize to {}x{}", source, height, width);
  const InterleavedImage decoded = decode_interleaved(bytes, source, channels, 1, max_pixels);
  const auto h = static_cast<int>(decoded.height), w = static_cast<int>(decoded.width);

  Image image;
  image.channels = channels;
  image.height = height > 0 ? height : h;
  image.width = width > 0 ? width : w;
  if (image.height == h && image.width == w) {
    image.pixels = planar(decoded.pixels.data(), h, w, channels);
    return image;
  }
  std::vector<std::uint8_t> resized(static_cast<std::size_t>(image.height * image.width * channels));
  const int ok = stbir_resize_uint8_generic(decoded.pixels.data(), w, h, 0, resized.data(),
                                            static_cast<int>(image.width), static_cast<int>(image.height), 0,
                                            channels, STBIR_ALPHA_CHANNEL_NONE, 0, STBIR_EDGE_CLAMP,
                                            STBIR_FILTER_TRIANGLE, STBIR_COLORSPACE_LINEAR, nullptr);
  ENGINE_CHECK(ok, "{}: resizing {}x{} to {}x{} failed", source, w, h, image.width, image.height);
  image.pixels = planar(resized.data(), image.height, image.width, channels);
  return image;
}

ImageInfo image_info(std::span<const std::uint8_t> bytes, const std::string& source) {
  ENGINE_CHECK(!bytes.empty(), "{}: empty image file (0 bytes)", source);
  const Format format = detect_format(bytes, source);
  ENGINE_CHECK(bytes.size() <= static_cast<std::size_t>(INT32_MAX), "{}: {} bytes is too large for an image",
               source, bytes.size());
  if (format == Format::Jpeg) {
    const JpegHeader header = jpeg_header(bytes, source);
    return {header.channels, header.height, header.width};
  }
  int w = 0, h = 0, channels = 0;
  ENGINE_CHECK(stbi_info_from_memory(bytes.data(), static_cast<int>(bytes.size()), &w, &h, &channels),
               "{}: corrupt or truncated {} header ({})", source, format_name(format), stbi_failure_reason());
  return {channels, h, w};
}

Image decode_image_file(const std::string& path, int channels, std::int64_t height, std::int64_t width) {
  return decode_image(read_file(path), path, channels, height, width);
}

std::vector<std::uint8_t> encode_png(const Image& image) {
  check_encodable(image);
  const auto hwc = interleaved(image);
  std::vector<std::uint8_t> out;
  const int c = static_cast<int>(image.channels);
  const int w = static_cast<int>(image.width);
  ENGINE_CHECK(
      stbi_write_png_to_func(append_bytes, &out, w, static_cast<int>(image.height), c, hwc.data(), w * c),
      "stb_image_write failed to encode a {}x{} PNG", image.width, image.height);
  return out;
}

std::vector<std::uint8_t> encode_bmp(const Image& image) {
  check_encodable(image);
  const auto hwc = interleaved(image);
  std::vector<std::uint8_t> out;
  ENGINE_CHECK(
      stbi_write_bmp_to_func(append_bytes, &out, static_cast<int>(image.width),
                             static_cast<int>(image.height), static_cast<int>(image.channels), hwc.data()),
      "stb_image_write failed to encode a {}x{} BMP", image.width, image.height);
  return out;
}

std::vector<std::uint8_t> encode_jpeg(const Image& image, int quality) {
  check_encodable(image);
  ENGINE_CHECK(quality >= 1 && quality <= 100, "JPEG quality {} is outside 1..100", quality);
  const auto hwc = interleaved(image);
  std::vector<std::uint8_t> out;
  ENGINE_CHECK(stbi_write_jpg_to_func(append_bytes, &out, static_cast<int>(image.width),
                                      static_cast<int>(image.height), static_cast<int>(image.channels),
                                      hwc.data(), quality),
               "stb_image_write failed to encode a {}x{} JPEG", image.width, image.height);
  return out;
}

void write_png(const std::string& path, const Image& image) {
  const auto bytes = encode_png(image);
  errno = 0;
  std::unique_ptr<std::FILE, FileCloser> file(std::fopen(path.c_str(), "wb"));
  ENGINE_CHECK(file != nullptr, "{}: cannot open for writing: {}", path, std::strerror(errno));
  ENGINE_CHECK(std::fwrite(bytes.data(), 1, bytes.size(), file.get()) == bytes.size(), "{}: write failed: {}",
               path, std::strerror(errno));
  const int rc = std::fclose(file.release());
  ENGINE_CHECK(rc == 0, "{}: write failed on close: {}", path, std::strerror(errno));
}

}  // namespace engine::data
