#include "layers/avgpool2d.h"

#include "kernels/ops/avgpool2d.h"
#include "layers/detail.h"

namespace engine::layers {

namespace {

AvgPool2dOptions square(int kernel_size, int stride, int padding, bool count_include_pad) {
  return {.kernel_h = kernel_size,
          .kernel_w = kernel_size,
          .stride_h = stride,
          .stride_w = stride,
          .pad_h = padding,
          .pad_w = padding,
          .count_include_pad = count_include_pad};
}

}  // namespace

AvgPool2d::AvgPool2d(int kernel_size, int stride, int padding, bool count_include_pad)
    : AvgPool2d(square(kernel_size, stride, padding, count_include_pad)) {}

AvgPool2d::AvgPool2d(const AvgPool2dOptions& options) : options_(options) {
  AvgPool2dOptions& o = options_;
  if (o.stride_h == 0) o.stride_h = o.kernel_h;
  if (o.stride_w == 0) o.stride_w = o.kernel_w;
  LAYER_CHECK(o.kernel_h > 0 && o.kernel_w > 0 && o.stride_h > 0 && o.stride_w > 0 && o.pad_h >= 0 &&
                  o.pad_w >= 0 && o.pad_h < o.kernel_h && o.pad_w < o.kernel_w,
              "bad options: kernel {}x{}, stride {}x{}, padding {}x{} (positive kernel and stride, padding "
              "from 0 to kernel - 1)",
              o.kernel_h, o.kernel_w, o.stride_h, o.stride_w, o.pad_h, o.pad_w);
}

AvgPool2dShape AvgPool2d::geometry(const Shape& x) const {
  const AvgPool2dOptions& o = options_;
  AvgPool2dShape s;
  s.window = {.n = detail::to_int(x[0]),
              .c = detail::to_int(x[1]),
              .h = detail::to_int(x[2]),
              .w = detail::to_int(x[3]),
              .kernel_h = o.kernel_h,
              .kernel_w = o.kernel_w,
              .stride_h = o.stride_h,
              .stride_w = o.stride_w,
              .pad_h = o.pad_h,
              .pad_w = o.pad_w,
              .ceil_mode = o.ceil_mode};
  s.count_include_pad = o.count_include_pad;
  return s;
}

Shape AvgPool2d::output_shape_impl(const Shape& in) const {
  const AvgPool2dOptions& o = options_;
  LAYER_CHECK(in.size() == 4, "expects an input [N, C, H, W], got {}", shape_str(in));
  LAYER_CHECK(in[0] > 0 && in[1] > 0 && in[2] > 0 && in[3] > 0, "empty input {}", shape_str(in));
  LAYER_CHECK(in[2] + 2 * o.pad_h >= o.kernel_h && in[3] + 2 * o.pad_w >= o.kernel_w,
              "a {}x{} window with padding {}x{} does not fit in the input {}", o.kernel_h, o.kernel_w,
              o.pad_h, o.pad_w, shape_str(in));
  const AvgPool2dShape s = geometry(in);
  return {in[0], in[1], s.p(), s.q()};
}

Tensor AvgPool2d::forward_impl(const Tensor& x, Mode) {
  const AvgPool2dShape s = geometry(x.shape());
  Tensor y = new_tensor({s.window.n, s.window.c, s.p(), s.q()}, x.dtype());
  ops::avgpool2d_forward(context(), s, x, y);
  return y;
}

Tensor AvgPool2d::backward_impl(const Tensor& dy, Mode) {
  if (!needs_input_grad()) return Tensor();
  Tensor dx = new_input_grad();
  ops::avgpool2d_backward(context(), geometry(last_input_shape()), dy, dx);
  return dx;
}

}  // namespace engine::layers
