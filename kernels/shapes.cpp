#include "kernels/shapes.h"

#include <algorithm>
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

void BatchNorm2dShape::validate_eps(double eps) {
  ENGINE_CHECK(eps >= 0.0, "batchnorm2d: eps must not be negative, got {}", eps);
}

void BatchNorm2dShape::validate_training(double momentum, double eps) const {
  validate();
  validate_eps(eps);
  ENGINE_CHECK(momentum >= 0.0 && momentum <= 1.0, "batchnorm2d: momentum must lie in [0, 1], got {}",
               momentum);
  ENGINE_CHECK(
      count() >= 2,
      "batchnorm2d: expected more than 1 value per channel when training, got input [{}, {}, {}, {}] "
      "({} per channel)",
      n, c, h, w, count());
}

namespace {

// The checks both poolings share; `op` names the op in the message.
void validate_window(const Pool2dShape& s, const char* op) {
  ENGINE_CHECK(s.n > 0 && s.c > 0 && s.h > 0 && s.w > 0,
               "{}: input sizes must be positive, got n={} c={} h={} w={}", op, s.n, s.c, s.h, s.w);
  ENGINE_CHECK(s.kernel_h > 0 && s.kernel_w > 0, "{}: kernel must be positive, got {}x{}", op, s.kernel_h,
               s.kernel_w);
  ENGINE_CHECK(s.stride_h > 0 && s.stride_w > 0, "{}: stride must be positive, got {}x{}", op, s.stride_h,
               s.stride_w);
  ENGINE_CHECK(s.pad_h >= 0 && s.pad_w >= 0, "{}: padding must be non-negative, got {}x{}", op, s.pad_h,
               s.pad_w);
}

void validate_fits(const Pool2dShape& s, const char* op) {
  ENGINE_CHECK(s.kernel_h <= s.h + 2 * s.pad_h && s.kernel_w <= s.w + 2 * s.pad_w,
               "{}: kernel {}x{} is larger than the padded input {}x{} (input {}x{}, padding {}x{})", op,
               s.kernel_h, s.kernel_w, s.h + 2 * s.pad_h, s.w + 2 * s.pad_w, s.h, s.w, s.pad_h, s.pad_w);
}

}  // namespace

void Pool2dShape::validate() const {
  validate_window(*this, "maxpool2d");
  ENGINE_CHECK(pad_h <= kernel_h / 2 && pad_w <= kernel_w / 2,
               "maxpool2d: padding {}x{} must be at most half the kernel {}x{}", pad_h, pad_w, kernel_h,
               kernel_w);
  validate_fits(*this, "maxpool2d");
  ENGINE_CHECK(static_cast<std::int64_t>(h) * w <= std::numeric_limits<std::int32_t>::max(),
               "maxpool2d: input plane {}x{} is too large for int32 argmax indices", h, w);
}

int AvgPool2dShape::divisor(int op, int oq) const {
  const Pool2dShape& s = window;
  const int h0 = op * s.stride_h - s.pad_h, w0 = oq * s.stride_w - s.pad_w;
  if (count_include_pad)
    return (std::min(h0 + s.kernel_h, s.h + s.pad_h) - h0) * (std::min(w0 + s.kernel_w, s.w + s.pad_w) - w0);
  const int rows = std::min(h0 + s.kernel_h, s.h) - std::max(h0, 0);
  const int cols = std::min(w0 + s.kernel_w, s.w) - std::max(w0, 0);
  return rows * cols;
}

void AvgPool2dShape::validate() const {
  const Pool2dShape& s = window;
  validate_window(s, "avgpool2d");
  ENGINE_CHECK(s.pad_h < s.kernel_h && s.pad_w < s.kernel_w,
               "avgpool2d: padding {}x{} must be smaller than the kernel {}x{} (a window of padding only has "
               "no mean)",
               s.pad_h, s.pad_w, s.kernel_h, s.kernel_w);
  validate_fits(s, "avgpool2d");
}

std::size_t Conv2dShape::x_size() const {
  return static_cast<std::size_t>(n) * static_cast<std::size_t>(c) * static_cast<std::size_t>(h) *
         static_cast<std::size_t>(w);
}

std::size_t Conv2dShape::w_size() const {
  return static_cast<std::size_t>(k) * static_cast<std::size_t>(c_per_group()) * static_cast<std::size_t>(r) *
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
  ENGINE_CHECK(dilation_h > 0 && dilation_w > 0, "conv2d: dilation must be positive, got ({}, {})",
               dilation_h, dilation_w);
  ENGINE_CHECK(groups > 0 && c % groups == 0 && k % groups == 0,
               "conv2d: groups {} must divide the input channels {} and the output channels {}", groups, c,
               k);
  ENGINE_CHECK(h + 2 * pad_h >= span_h() && w + 2 * pad_w >= span_w(),
               "conv2d: kernel {}x{} (dilation ({}, {}): spans {}x{}) is larger than the padded input {}x{} "
               "(input {}x{}, padding ({}, {}))",
               r, s, dilation_h, dilation_w, span_h(), span_w(), h + 2 * pad_h, w + 2 * pad_w, h, w, pad_h,
               pad_w);
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

void ChannelAffineShape::validate() const {
  ENGINE_CHECK(outer > 0 && channels > 0 && inner > 0,
               "channel_affine: sizes must be positive, got outer={} channels={} inner={}", outer, channels,
               inner);
}

}  // namespace engine
