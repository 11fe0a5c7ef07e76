#include "kernels/shapes.h"

#include <limits>

#include "core/error.h"

namespace engine {

std::size_t BatchNorm2dShape::x_size() const { return count() * static_cast<std::size_t>(c); }

std::size_t BatchNorm2dShape::count() const {
  return static_cast<std::size_t>(n) * static_cast<std::size_t>(h) * static_cast<std::size_t>(w);
}

void BatchNorm2dShape::validate() const {
  ENGINE_CHECK(n > 0 && c > 0 && h > 0 && w > 0, "batchnorm2d: sizes must be positive, got x[{}, {}, {}, {}]",
               n, c, h, w);
}

void Pool2dShape::validate() const {
  ENGINE_CHECK(n > 0 && c > 0 && h > 0 && w > 0,
               "maxpool2d: input sizes must be positive, got n={} c={} h={} w={}", n, c, h, w);
  ENGINE_CHECK(kernel_h > 0 && kernel_w > 0, "maxpool2d: kernel must be positive, got {}x{}", kernel_h,
               kernel_w);
  ENGINE_CHECK(stride_h > 0 && stride_w > 0, "maxpool2d: stride must be positive, got {}x{}", stride_h,
               stride_w);
  ENGINE_CHECK(pad_h >= 0 && pad_w >= 0, "maxpool2d: padding must be non-negative, got {}x{}", pad_h, pad_w);
  ENGINE_CHECK(pad_h <= kernel_h / 2 && pad_w <= kernel_w / 2,
               "maxpool2d: padding {}x{} must be at most half the kernel {}x{}", pad_h, pad_w, kernel_h,
               kernel_w);
  ENGINE_CHECK(kernel_h <= h + 2 * pad_h && kernel_w <= w + 2 * pad_w,
               "maxpool2d: kernel {}x{} is larger than the padded input {}x{} (input {}x{}, padding {}x{})",
               kernel_h, kernel_w, h + 2 * pad_h, w + 2 * pad_w, h, w, pad_h, pad_w);
  ENGINE_CHECK(static_cast<std::int64_t>(h) * w <= std::numeric_limits<std::int32_t>::max(),
               "maxpool2d: input plane {}x{} is too large for int32 argmax indices", h, w);
}

std::size_t Conv2dShape::x_size() const {
  return static_cast<std::size_t>(n) * static_cast<std::size_t>(c) * static_cast<std::size_t>(h) *
         static_cast<std::size_t>(w);
}

std::size_t Conv2dShape::w_size() const {
  return static_cast<std::size_t>(k) * static_cast<std::size_t>(c) * static_cast<std::size_t>(r) *
         static_cast<std::size_t>(s);
}

std::size_t Conv2dShape::y_size() const {
  return static_cast<std::size_t>(n) * static_cast<std::size_t>(k) * static_cast<std::size_t>(p()) *
         static_cast<std::size_t>(q());
}

void Conv2dShape::validate() const {
  ENGINE_CHECK(n > 0 && c > 0 && h > 0 && w > 0,
               "conv2d: input sizes must be positive, got x[{}, {}, {}, {}]", n, c, h, w);
  ENGINE_CHECK(k > 0 && r > 0 && s > 0, "conv2d: weight sizes must be positive, got w[{}, {}, {}, {}]", k, c,
               r, s);
  ENGINE_CHECK(stride_h > 0 && stride_w > 0, "conv2d: stride must be positive, got ({}, {})", stride_h,
               stride_w);
  ENGINE_CHECK(pad_h >= 0 && pad_w >= 0, "conv2d: padding must not be negative, got ({}, {})", pad_h, pad_w);
  ENGINE_CHECK(h + 2 * pad_h >= r && w + 2 * pad_w >= s,
               "conv2d: kernel {}x{} is larger than the padded input {}x{} (input {}x{}, padding ({}, {}))",
               r, s, h + 2 * pad_h, w + 2 * pad_w, h, w, pad_h, pad_w);
}

std::size_t LinearShape::x_size() const {
  return static_cast<std::size_t>(n) * static_cast<std::size_t>(in_features);
}
std::size_t LinearShape::w_size() const {
  return static_cast<std::size_t>(out_features) * static_cast<std::size_t>(in_features);
}
std::size_t LinearShape::y_size() const {
  return static_cast<std::size_t>(n) * static_cast<std::size_t>(out_features);
}

void LinearShape::validate() const {
  ENGINE_CHECK(n > 0 && in_features > 0 && out_features > 0,
               "linear: sizes must be positive, got x[{}, {}] and w[{}, {}]", n, in_features, out_features,
               in_features);
}

}  // namespace engine
