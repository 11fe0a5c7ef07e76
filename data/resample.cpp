#include "data/resample.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.h"

namespace engine::data {
namespace {

constexpr int kPrecisionBits = 32 - 8 - 2;  // Pillow's PRECISION_BITS for 8-bit images

// One axis's filter: output pixel o reads input [first[o], first[o] + count[o]) with weights
// weights[o * taps + k].
struct Coefficients {
  int taps = 0;
  std::vector<std::int64_t> first, count;
  std::vector<std::int32_t> weights;
};

double triangle(double x) {
  x = std::fabs(x);
  return x < 1.0 ? 1.0 - x : 0.0;
}

// Pillow's precompute_coeffs + normalize_coeffs_8bpc (Resample.c) for the box [0, in) onto `out` pixels.
Coefficients coefficients(std::int64_t in, std::int64_t out) {
  const double scale = static_cast<double>(in) / static_cast<double>(out);
  const double filterscale = std::max(scale, 1.0);
  const double support = 1.0 * filterscale;  // the bilinear filter's support is 1
  Coefficients c;
  c.taps = static_cast<int>(std::ceil(support)) * 2 + 1;
  c.first.resize(static_cast<std::size_t>(out));
  c.count.resize(static_cast<std::size_t>(out));
  c.weights.assign(static_cast<std::size_t>(out * c.taps), 0);
  std::vector<double> k(static_cast<std::size_t>(c.taps));
  for (std::int64_t o = 0; o < out; ++o) {
    const double center = (static_cast<double>(o) + 0.5) * scale;
    const double ss = 1.0 / filterscale;
    const auto xmin = std::max<std::int64_t>(static_cast<std::int64_t>(center - support + 0.5), 0);
    const auto xmax = std::min<std::int64_t>(static_cast<std::int64_t>(center + support + 0.5), in) - xmin;
    double ww = 0.0;
    for (std::int64_t x = 0; x < xmax; ++x) {
      const double w = triangle((static_cast<double>(x + xmin) - center + 0.5) * ss);
      k[static_cast<std::size_t>(x)] = w;
      ww += w;
    }
    for (std::int64_t x = 0; x < xmax; ++x) {
      const double w = ww != 0.0 ? k[static_cast<std::size_t>(x)] / ww : k[static_cast<std::size_t>(x)];
      c.weights[static_cast<std::size_t>(o * c.taps + x)] = static_cast<std::int32_t>(
          w < 0 ? -0.5 + w * (1 << kPrecisionBits) : 0.5 + w * (1 << kPrecisionBits));
    }
    c.first[static_cast<std::size_t>(o)] = xmin;
    c.count[static_cast<std::size_t>(o)] = xmax;
  }
  return c;
}

std::uint8_t clip8(std::int32_t v) {
  if (v >= (1 << kPrecisionBits << 8)) return 255;
  if (v <= 0) return 0;
  return static_cast<std::uint8_t>(v >> kPrecisionBits);
}

}  // namespace

void resample_bilinear(const std::uint8_t* src, std::int64_t src_stride, int channels, std::int64_t in_h,
                       std::int64_t in_w, std::int64_t out_h, std::int64_t out_w, const PixelBox& window,
                       std::uint8_t* dst) {
  ENGINE_CHECK(in_h > 0 && in_w > 0 && out_h > 0 && out_w > 0 && channels >= 1 && channels <= 4,
               "resample_bilinear: {}x{}x{} to {}x{}", in_h, in_w, channels, out_h, out_w);
  ENGINE_CHECK(window.top >= 0 && window.left >= 0 && window.height > 0 && window.width > 0 &&
                   window.top + window.height <= out_h && window.left + window.width <= out_w,
               "resample_bilinear: window {}+{} x {}+{} outside {}x{}", window.top, window.height,
               window.left, window.width, out_h, out_w);
  const bool horizontal = in_w != out_w, vertical = in_h != out_h;
  const Coefficients cx = horizontal ? coefficients(in_w, out_w) : Coefficients{};
  const Coefficients cy = vertical ? coefficients(in_h, out_h) : Coefficients{};
  // The input rows the window's output rows read.
  std::int64_t row0 = window.top, row1 = window.top + window.height;
  if (vertical) {
    row0 = cy.first[static_cast<std::size_t>(window.top)];
    const auto last = static_cast<std::size_t>(window.top + window.height - 1);
    row1 = cy.first[last] + cy.count[last];
  }
  // Pass 1: those rows, the window's columns, interleaved uint8 (Pillow rounds between passes).
  const std::int64_t rows = row1 - row0, cols = window.width;
  std::vector<std::uint8_t> mid(static_cast<std::size_t>(rows * cols * channels));
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::uint8_t* in = src + (row0 + r) * src_stride;
    std::uint8_t* m = mid.data() + r * cols * channels;
    for (std::int64_t x = 0; x < cols; ++x) {
      const std::int64_t o = window.left + x;
      if (!horizontal) {
        for (int c = 0; c < channels; ++c) m[x * channels + c] = in[o * channels + c];
        continue;
      }
      const std::int64_t first = cx.first[static_cast<std::size_t>(o)],
                         n = cx.count[static_cast<std::size_t>(o)];
      const std::int32_t* w = cx.weights.data() + o * cx.taps;
      for (int c = 0; c < channels; ++c) {
        std::int32_t ss = 1 << (kPrecisionBits - 1);
        for (std::int64_t k = 0; k < n; ++k) ss += in[(first + k) * channels + c] * w[k];
        m[x * channels + c] = clip8(ss);
      }
    }
  }
  // Pass 2: vertical, into planar dst.
  const std::int64_t plane = window.height * window.width;
  for (std::int64_t y = 0; y < window.height; ++y) {
    const std::int64_t o = window.top + y;
    for (std::int64_t x = 0; x < cols; ++x) {
      for (int c = 0; c < channels; ++c) {
        std::uint8_t v = 0;
        if (!vertical) {
          v = mid[static_cast<std::size_t>(((o - row0) * cols + x) * channels + c)];
        } else {
          const std::int64_t first = cy.first[static_cast<std::size_t>(o)] - row0;
          const std::int64_t n = cy.count[static_cast<std::size_t>(o)];
          const std::int32_t* w = cy.weights.data() + o * cy.taps;
          std::int32_t ss = 1 << (kPrecisionBits - 1);
          for (std::int64_t k = 0; k < n; ++k)
            ss += mid[static_cast<std::size_t>(((first + k) * cols + x) * channels + c)] * w[k];
          v = clip8(ss);
        }
        dst[c * plane + y * window.width + x] = v;
      }
    }
  }
}

PixelBox resized_shape(std::int64_t height, std::int64_t width, std::int64_t size) {
  const std::int64_t shorter = std::min(height, width), longer = std::max(height, width);
  const auto other = static_cast<std::int64_t>(static_cast<double>(size) * static_cast<double>(longer) /
                                               static_cast<double>(shorter));
  return height <= width ? PixelBox{0, 0, size, other} : PixelBox{0, 0, other, size};
}

PixelBox center_crop_box(std::int64_t height, std::int64_t width, std::int64_t size) {
  ENGINE_CHECK(size <= height && size <= width, "center crop of {} from a {}x{} image", size, height, width);
  const auto top = static_cast<std::int64_t>(std::nearbyint(static_cast<double>(height - size) / 2.0));
  const auto left = static_cast<std::int64_t>(std::nearbyint(static_cast<double>(width - size) / 2.0));
  return {top, left, size, size};
}

}  // namespace engine::data
