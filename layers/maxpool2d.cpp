#include "layers/maxpool2d.h"

#include <type_traits>

#include "kernels/cpu/maxpool2d.h"
#include "kernels/cpu_fast/maxpool2d.h"
#include "layers/dispatch.h"

#if ENGINE_HAVE_CUDA
#include "kernels/cuda/maxpool2d.h"
#endif

namespace engine::layers {

MaxPool2d::MaxPool2d(int kernel_size, int stride, int padding)
    : kernel_(kernel_size), stride_(stride == 0 ? kernel_size : stride), padding_(padding) {
  LAYER_CHECK(kernel_ > 0 && stride_ > 0 && padding_ >= 0 && 2 * padding_ <= kernel_,
              "bad options: kernel_size {}, stride {}, padding {} (padding at most half the kernel)", kernel_,
              stride_, padding_);
}

namespace {

cpu::Pool2dShape geometry(const Shape& x, int kernel, int stride, int padding) {
  cpu::Pool2dShape s;
  s.n = detail::to_int(x[0]);
  s.c = detail::to_int(x[1]);
  s.h = detail::to_int(x[2]);
  s.w = detail::to_int(x[3]);
  s.kernel_h = s.kernel_w = kernel;
  s.stride_h = s.stride_w = stride;
  s.pad_h = s.pad_w = padding;
  return s;
}

}  // namespace

Shape MaxPool2d::output_shape_impl(const Shape& in) const {
  LAYER_CHECK(in.size() == 4, "expects an input [N, C, H, W], got {}", shape_str(in));
  LAYER_CHECK(in[0] > 0 && in[1] > 0 && in[2] > 0 && in[3] > 0, "empty input {}", shape_str(in));
  LAYER_CHECK(in[2] + 2 * padding_ >= kernel_ && in[3] + 2 * padding_ >= kernel_,
              "a {}x{} window with padding {} does not fit in the input {}", kernel_, kernel_, padding_,
              shape_str(in));
  const cpu::Pool2dShape s = geometry(in, kernel_, stride_, padding_);
  return {in[0], in[1], s.p(), s.q()};
}

Tensor MaxPool2d::forward_impl(const Tensor& x, Mode mode) {
  const cpu::Pool2dShape s = geometry(x.shape(), kernel_, stride_, padding_);
  const Shape out = {s.n, s.c, s.p(), s.q()};
  Tensor y = new_tensor(out);
  // Inference: the argmax is scratch, dropped on return (its cached block is reused by the next batch).
  Tensor argmax = new_tensor(out, DType::I32);
  argmax_ = keeps_for_backward(mode) ? argmax : Tensor();
  if (x.is_cuda()) {
#if ENGINE_HAVE_CUDA
    cuda::maxpool2d_forward(detail::cuda_stream(context()), s, x.data<float>(), y.data<float>(),
                            argmax.data<std::int32_t>());
#else
    detail::fail_without_cuda(*this);
#endif
  } else {
    detail::with_cpu_scalar(*this, x.dtype(), [&]<typename T>() {
      if constexpr (std::is_same_v<T, float>) {  // float32: the fast path
        cpu_fast::maxpool2d_forward(s, x.data<T>(), y.data<T>(), argmax.data<std::int32_t>());
      } else {
        cpu::maxpool2d_forward<T>(s, x.data<T>(), y.data<T>(), argmax.data<std::int32_t>());
      }
    });
  }
  return y;
}

Tensor MaxPool2d::backward_impl(const Tensor& dy, Mode) {
  Tensor dx;
  if (needs_input_grad()) {
    const cpu::Pool2dShape s = geometry(last_input_shape(), kernel_, stride_, padding_);
    dx = new_tensor(last_input_shape());
    if (dy.is_cuda()) {
#if ENGINE_HAVE_CUDA
      cuda::maxpool2d_backward(detail::cuda_stream(context()), s, dy.data<float>(),
                               argmax_.data<std::int32_t>(), dx.data<float>());
#else
      detail::fail_without_cuda(*this);
#endif
    } else {
      detail::with_cpu_scalar(*this, dy.dtype(), [&]<typename T>() {
        if constexpr (std::is_same_v<T, float>) {
          cpu_fast::maxpool2d_backward(s, dy.data<T>(), argmax_.data<std::int32_t>(), dx.data<T>());
        } else {
          cpu::maxpool2d_backward<T>(s, dy.data<T>(), argmax_.data<std::int32_t>(), dx.data<T>());
        }
      });
    }
  }
  argmax_ = Tensor();
  return dx;
}

}  // namespace engine::layers
