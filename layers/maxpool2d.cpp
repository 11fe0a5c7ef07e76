#include "layers/maxpool2d.h"

#include "kernels/ops/maxpool2d.h"
#include "layers/detail.h"

namespace engine::layers {

MaxPool2d::MaxPool2d(int kernel_size, int stride, int padding, bool ceil_mode)
    : kernel_(kernel_size),
      stride_(stride == 0 ? kernel_size : stride),
      padding_(padding),
      ceil_mode_(ceil_mode) {
  LAYER_CHECK(kernel_ > 0 && stride_ > 0 && padding_ >= 0 && 2 * padding_ <= kernel_,
              "bad options: kernel_size {}, stride {}, padding {} (padding at most half the kernel)", kernel_,
              stride_, padding_);
}

namespace {

Pool2dShape geometry(const Shape& x, int kernel, int stride, int padding, bool ceil_mode) {
  Pool2dShape s;
  s.n = detail::to_int(x[0]);
  s.c = detail::to_int(x[1]);
  s.h = detail::to_int(x[2]);
  s.w = detail::to_int(x[3]);
  s.kernel_h = s.kernel_w = kernel;
  s.stride_h = s.stride_w = stride;
  s.pad_h = s.pad_w = padding;
  s.ceil_mode = ceil_mode;
  return s;
}

}  // namespace

Shape MaxPool2d::output_shape_impl(const Shape& in) const {
  LAYER_CHECK(in.size() == 4, "expects an input [N, C, H, W], got {}", shape_str(in));
  LAYER_CHECK(in[0] > 0 && in[1] > 0 && in[2] > 0 && in[3] > 0, "empty input {}", shape_str(in));
  LAYER_CHECK(in[2] + 2 * padding_ >= kernel_ && in[3] + 2 * padding_ >= kernel_,
              "a {}x{} window with padding {} does not fit in the input {}", kernel_, kernel_, padding_,
              shape_str(in));
  const Pool2dShape s = geometry(in, kernel_, stride_, padding_, ceil_mode_);
  return {in[0], in[1], s.p(), s.q()};
}

Tensor MaxPool2d::forward_impl(const Tensor& x, Mode mode) {
  const Pool2dShape s = geometry(x.shape(), kernel_, stride_, padding_, ceil_mode_);
  const Shape out = {s.n, s.c, s.p(), s.q()};
  Tensor y = new_tensor(out, x.dtype());
  // Inference: the argmax is scratch, dropped on return (its cached block is reused by the next batch).
  Tensor argmax = new_tensor(out, DType::I32);
  argmax_ = keeps_for_backward(mode) ? argmax : Tensor();
  ops::maxpool2d_forward(context(), s, x, y, argmax);
  return y;
}

Tensor MaxPool2d::backward_impl(const Tensor& dy, Mode) {
  Tensor dx;
  if (needs_input_grad()) {
    const Pool2dShape s = geometry(last_input_shape(), kernel_, stride_, padding_, ceil_mode_);
    dx = new_input_grad();
    ops::maxpool2d_backward(context(), s, dy, argmax_, dx);
  }
  argmax_ = Tensor();
  return dx;
}

}  // namespace engine::layers
