#include "layers/linear.h"

#include <type_traits>

#include "kernels/cpu/linear.h"
#include "kernels/cpu_fast/linear.h"
#include "layers/dispatch.h"

#if ENGINE_HAVE_CUDA
#include "kernels/cuda/linear.h"
#endif

namespace engine::layers {

Linear::Linear(int in_features, int out_features, bool bias)
    : in_(in_features), out_(out_features), bias_on_(bias) {
  LAYER_CHECK(in_ > 0 && out_ > 0, "bad sizes: in_features {}, out_features {}", in_, out_);
  weight_ = add_parameter("weight", {out_, in_}, ParamInit::FanInUniform, in_);
  if (bias_on_) bias_ = add_parameter("bias", {out_}, ParamInit::FanInUniform, in_);
}

Shape Linear::output_shape_impl(const Shape& in) const {
  LAYER_CHECK(in.size() == 2, "expects an input [N, {}], got {} (flatten it first)", in_, shape_str(in));
  LAYER_CHECK(in[1] == in_, "expects {} input features, got an input {}", in_, shape_str(in));
  LAYER_CHECK(in[0] > 0, "empty input {}", shape_str(in));
  return {in[0], out_};
}

Tensor Linear::forward_impl(const Tensor& x, Mode mode) {
  const cpu::LinearShape s{.n = detail::to_int(x.dim(0)), .in_features = in_, .out_features = out_};
  Tensor y = new_tensor({x.dim(0), out_});
  const Tensor& w = param(weight_).value;
  if (x.is_cuda()) {
#if ENGINE_HAVE_CUDA
    const ExecutionContext& ctx = context();
    const float* b = bias_on_ ? param(bias_).value.data<float>() : nullptr;
    cuda::linear_forward(detail::cuda_handles(*this, ctx), detail::cuda_stream(ctx), s, x.data<float>(),
                         w.data<float>(), b, y.data<float>());
#else
    detail::fail_without_cuda(*this);
#endif
  } else {
    detail::with_cpu_scalar(*this, x.dtype(), [&]<typename T>() {
      const T* b = bias_on_ ? param(bias_).value.data<T>() : nullptr;
      if constexpr (std::is_same_v<T, float>) {  // float32: oneDNN's GEMM; float64 keeps the reference
        cpu_fast::linear_forward(s, x.data<T>(), w.data<T>(), b, y.data<T>());
      } else {
        cpu::linear_forward<T>(s, x.data<T>(), w.data<T>(), b, y.data<T>());
      }
    });
  }
  x_ = keeps_for_backward(mode) ? x : Tensor();
  return y;
}

Tensor Linear::backward_impl(const Tensor& dy, Mode) {
  const cpu::LinearShape s{.n = detail::to_int(x_.dim(0)), .in_features = in_, .out_features = out_};
  Tensor dx = needs_input_grad() ? new_tensor(x_.shape()) : Tensor();
  const Tensor& w = param(weight_).value;
  const Tensor& dw = param(weight_).grad;
  if (dy.is_cuda()) {
#if ENGINE_HAVE_CUDA
    const ExecutionContext& ctx = context();
    float* db = bias_on_ ? param(bias_).grad.data<float>() : nullptr;
    cuda::linear_backward(detail::cuda_handles(*this, ctx), detail::cuda_stream(ctx), s, x_.data<float>(),
                          w.data<float>(), dy.data<float>(), dx.defined() ? dx.data<float>() : nullptr,
                          dw.data<float>(), db);
#else
    detail::fail_without_cuda(*this);
#endif
  } else {
    detail::with_cpu_scalar(*this, dy.dtype(), [&]<typename T>() {
      T* db = bias_on_ ? param(bias_).grad.data<T>() : nullptr;
      T* dx_data = dx.defined() ? dx.data<T>() : nullptr;
      if constexpr (std::is_same_v<T, float>) {
        cpu_fast::linear_backward(s, x_.data<T>(), w.data<T>(), dy.data<T>(), dx_data, dw.data<T>(), db);
      } else {
        cpu::linear_backward<T>(s, x_.data<T>(), w.data<T>(), dy.data<T>(), dx_data, dw.data<T>(), db);
      }
    });
  }
  x_ = Tensor();
  return dx;
}

}  // namespace engine::layers
