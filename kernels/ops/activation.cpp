#include "kernels/ops/activation.h"

#include "kernels/cpu/activation.h"
#include "kernels/cpu_fast/activation.h"
#include "kernels/cuda/activation.h"
#include "kernels/ops/bf16_storage.h"
#include "kernels/ops/dispatch.h"

namespace engine::ops {

using bf16::NativeBf16;

void activation_forward(const ExecutionContext& ctx, const ActivationParams& p, const Tensor& x,
                        const Tensor& y) {
  const std::string op(activation_name(p.kind));
  check_same_layout(op.c_str(), {{"x", x}, {"y", y}});
  if (bf16::on_float32(
          ctx, {x}, {y},
          [&](const Tensor* in, const Tensor* out) { activation_forward(ctx, p, in[0], out[0]); },
          NativeBf16::Cuda)) {
    return;
  }
  dispatch_with_bf16(op.c_str(), ctx, x, [&]<Path P, typename T>() {
    if constexpr (P == Path::Cuda) {
      cuda::activation_forward(cuda_stream(ctx), p, x.data<T>(), y.data<T>(), x.numel());
    } else if constexpr (P == Path::CpuFast) {
      cpu_fast::activation_forward(p, x.data<T>(), y.data<T>(), x.numel());
    } else {
      cpu::activation_forward<T>(p, x.data<T>(), y.data<T>(), x.numel());
    }
  });
}

void activation_backward(const ExecutionContext& ctx, const ActivationParams& p, const Tensor& saved,
                         const Tensor& dy, const Tensor& dx) {
  const std::string op(activation_name(p.kind));
  check_same_layout(op.c_str(), {{"saved", saved}, {"dy", dy}, {"dx", dx}});
  if (bf16::on_float32(
          ctx, {saved, dy}, {dx},
          [&](const Tensor* in, const Tensor* out) { activation_backward(ctx, p, in[0], in[1], out[0]); },
          NativeBf16::Cuda)) {
    return;
  }
  dispatch_with_bf16(op.c_str(), ctx, dy, [&]<Path P, typename T>() {
    if constexpr (P == Path::Cuda) {
      cuda::activation_backward(cuda_stream(ctx), p, saved.data<T>(), dy.data<T>(), dx.data<T>(), dy.numel());
    } else if constexpr (P == Path::CpuFast) {
      cpu_fast::activation_backward(p, saved.data<T>(), dy.data<T>(), dx.data<T>(), dy.numel());
    } else {
      cpu::activation_backward<T>(p, saved.data<T>(), dy.data<T>(), dx.data<T>(), dy.numel());
    }
  });
}

}  // namespace engine::ops
