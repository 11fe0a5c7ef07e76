#include "layers/dropout.h"

#include <type_traits>

#include "kernels/cpu/dropout.h"
#include "kernels/cpu_fast/dropout.h"
#include "layers/dispatch.h"

#if ENGINE_HAVE_CUDA
#include "kernels/cuda/dropout.h"
#endif

namespace engine::layers {

Dropout::Dropout(double p) : p_(static_cast<float>(p)) {
  LAYER_CHECK(p >= 0.0 && p <= 1.0, "p must be in [0, 1], got {}", p);
}

Tensor Dropout::forward_impl(const Tensor& x, Mode mode) {
  if (mode != Mode::Train) return x;
  ExecutionContext& ctx = context();
  seed_ = ctx.dropout_seed;
  offset_ = ctx.dropout_offset++;
  Tensor y = new_tensor(x.shape());
  if (x.is_cuda()) {
#if ENGINE_HAVE_CUDA
    cuda::dropout_forward(detail::cuda_stream(ctx), p_, seed_, offset_, x.data<float>(), y.data<float>(),
                          x.numel());
#else
    detail::fail_without_cuda(*this);
#endif
  } else {
    detail::with_cpu_scalar(*this, x.dtype(), [&]<typename T>() {
      if constexpr (std::is_same_v<T, float>) {  // float32: the fast path (the same mask)
        cpu_fast::dropout_forward(p_, seed_, offset_, x.data<T>(), y.data<T>(), x.numel());
      } else {
        cpu::dropout_forward<T>(p_, seed_, offset_, x.data<T>(), y.data<T>(), x.numel());
      }
    });
  }
  return y;
}

Tensor Dropout::backward_impl(const Tensor& dy, Mode mode) {
  if (!needs_input_grad()) return Tensor();
  if (mode != Mode::Train) return dy;
  Tensor dx = new_tensor(dy.shape());
  if (dy.is_cuda()) {
#if ENGINE_HAVE_CUDA
    cuda::dropout_backward(detail::cuda_stream(context()), p_, seed_, offset_, dy.data<float>(),
                           dx.data<float>(), dy.numel());
#else
    detail::fail_without_cuda(*this);
#endif
  } else {
    detail::with_cpu_scalar(*this, dy.dtype(), [&]<typename T>() {
      if constexpr (std::is_same_v<T, float>) {
        cpu_fast::dropout_backward(p_, seed_, offset_, dy.data<T>(), dx.data<T>(), dy.numel());
      } else {
        cpu::dropout_backward<T>(p_, seed_, offset_, dy.data<T>(), dx.data<T>(), dy.numel());
      }
    });
  }
  return dx;
}

}  // namespace engine::layers
