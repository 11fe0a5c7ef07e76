#include "layers/global_avgpool.h"

#include "kernels/cpu/avgpool.h"
#include "layers/dispatch.h"

#if ENGINE_HAVE_CUDA
#include "kernels/cuda/avgpool.h"
#endif

namespace engine::layers {

using detail::to_int;

Shape GlobalAvgPool::output_shape_impl(const Shape& in) const {
  LAYER_CHECK(in.size() == 4, "expects an input [N, C, H, W], got {}", shape_str(in));
  LAYER_CHECK(in[0] > 0 && in[1] > 0 && in[2] > 0 && in[3] > 0, "empty input {}", shape_str(in));
  return {in[0], in[1]};
}

Tensor GlobalAvgPool::forward_impl(const Tensor& x, Mode) {
  const Shape& s = x.shape();
  Tensor y = new_tensor({s[0], s[1]});
  if (x.is_cuda()) {
#if ENGINE_HAVE_CUDA
    cuda::global_avgpool_forward(detail::cuda_stream(context()), to_int(s[0]), to_int(s[1]), to_int(s[2]),
                                 to_int(s[3]), x.data<float>(), y.data<float>());
#else
    detail::fail_without_cuda(*this);
#endif
  } else {
    detail::with_cpu_scalar(*this, x.dtype(), [&]<typename T>() {
      cpu::global_avgpool_forward<T>(to_int(s[0]), to_int(s[1]), to_int(s[2]), to_int(s[3]), x.data<T>(),
                                     y.data<T>());
    });
  }
  return y;
}

Tensor GlobalAvgPool::backward_impl(const Tensor& dy, Mode) {
  if (!needs_input_grad()) return Tensor();
  const Shape& s = last_input_shape();
  Tensor dx = new_tensor(s);
  if (dy.is_cuda()) {
#if ENGINE_HAVE_CUDA
    cuda::global_avgpool_backward(detail::cuda_stream(context()), to_int(s[0]), to_int(s[1]), to_int(s[2]),
                                  to_int(s[3]), dy.data<float>(), dx.data<float>());
#else
    detail::fail_without_cuda(*this);
#endif
  } else {
    detail::with_cpu_scalar(*this, dy.dtype(), [&]<typename T>() {
      cpu::global_avgpool_backward<T>(to_int(s[0]), to_int(s[1]), to_int(s[2]), to_int(s[3]), dy.data<T>(),
                                      dx.data<T>());
    });
  }
  return dx;
}

}  // namespace engine::layers
