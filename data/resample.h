#pragma once
// Bilinear resampling with antialiasing, as torchvision resizes a PIL image (Image.resize with BILINEAR:
// Pillow's two-pass triangle filter, widened by the scale factor when shrinking, 22-bit fixed-point weights,
// the horizontal pass rounded to uint8 before the vertical one). The results are Pillow's, byte for byte,
// so a crop resized here equals torchvision's F.resized_crop of the same box on a PIL image.
//
// Only a window of the output can be computed (Resize then CenterCrop: the pixels the crop keeps), and only
// the input rows that window needs are read.

#include <cstdint>

namespace engine::data {

// A box in pixels: rows [top, top + height), columns [left, left + width).
struct PixelBox {
  std::int64_t top = 0, left = 0, height = 0, width = 0;
};

// src: interleaved in_h x in_w x channels bytes, rows `src_stride` bytes apart. Resizes it to out_h x out_w
// and writes the output's window `window` as planar channels x window.height x window.width bytes to dst.
void resample_bilinear(const std::uint8_t* src, std::int64_t src_stride, int channels, std::int64_t in_h,
                       std::int64_t in_w, std::int64_t out_h, std::int64_t out_w, const PixelBox& window,
                       std::uint8_t* dst);

// torchvision's Resize(size) with one int: the shorter side becomes `size`, the longer int(size * long /
// short). Returns {height, width}.
PixelBox resized_shape(std::int64_t height, std::int64_t width, std::int64_t size);

// torchvision's CenterCrop(size) of a height x width image (needs size <= both): top = round((height -
// size) / 2) with Python's round (half to even), the same for left.
PixelBox center_crop_box(std::int64_t height, std::int64_t width, std::int64_t size);

}  // namespace engine::data
