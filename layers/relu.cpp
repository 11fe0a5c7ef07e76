#include "layers/relu.h"

#include <type_traits>

#include "kernels/cpu/relu.h"
#include "kernels/cpu_fast/relu.h"
#include "layers/dispatch.h"

#if ENGINE_HAVE_CUDA
#include "kernels/cuda/relu.h"
#endif

namespace engine::layers {

Tensor ReLU::forward_impl(const Tensor& x, Mode mode) {
  Tensor y = new_tensor(x.shape());
  if (x.is_cuda()) {
#if ENGINE_HAVE_CUDA
    cuda::relu_forward(detail::cuda_stream(context()), x.data<float>(), y.data<float>(), x.numel());
#else
    detail::fail_without_cuda(*this);
#endif
  } else {
    detail::with_cpu_scalar(*this, x.dtype(), [&]<typename T>() {
      if constexpr (std::is_same_v<T, float>) {  // float32: the fast path
        cpu_fast::relu_forward(x.data<T>(), y.data<T>(), x.numel());
      } else {
        cpu::relu_forward<T>(x.data<T>(), y.data<T>(), x.numel());
      }
    });
  }
  x_ = keeps_for_backward(mode) ? x : Tensor();
  return y;
}

Tensor ReLU::backward_impl(const Tensor& dy, Mode) {
  Tensor dx;
  if (needs_input_grad()) {
    dx = new_tensor(dy.shape());
    if (dy.is_cuda()) {
#if ENGINE_HAVE_CUDA
      cuda::relu_backward(detail::cuda_stream(context()), x_.data<float>(), dy.data<float>(),
                          dx.data<float>(), dy.numel());
#else
      detail::fail_without_cuda(*this);
#endif
    } else {
      detail::with_cpu_scalar(*this, dy.dtype(), [&]<typename T>() {
        if constexpr (std::is_same_v<T, float>) {
          cpu_fast::relu_backward(x_.data<T>(), dy.data<T>(), dx.data<T>(), dy.numel());
        } else {
          cpu::relu_backward<T>(x_.data<T>(), dy.data<T>(), dx.data<T>(), dy.numel());
        }
      });
    }
  }
  x_ = Tensor();
  return dx;
}

}  // namespace engine::layers
