#include "kernels/ops/gelu.h"

#include "kernels/cpu/gelu.h"
#include "kernels/cpu_fast/gelu.h"
#include "kernels/cuda/gelu.h"
#include "kernels/ops/bf16_storage.h"
#include "kernels/ops/dispatch.h"

namespace engine::ops {

using bf16::NativeBf16;

void gelu_forward(const ExecutionContext& ctx, const Tensor& x, const Tensor& y) {
  check_same_layout("gelu", {{"x", x}, {"y", y}});
  if (bf16::on_float32(
          ctx, {x}, {y}, [&](const Tensor* in, const Tensor* out) { gelu_forward(ctx, in[0], out[0]); },
          NativeBf16::Cuda)) {
    return;
  }
  dispatch_with_bf16("gelu", ctx, x, [&]<Path P, typename T>() {
    if constexpr (P == Path::Cuda) {
      cuda::gelu_forward(cuda_stream(ctx), x.data<T>(), y.data<T>(), x.numel());
    } else if constexpr (P == Path::CpuFast) {
      cpu_fast::gelu_forward(x.data<T>(), y.data<T>(), x.numel());
    } else {
      cpu::gelu_forward<T>(x.data<T>(), y.data<T>(), x.numel());
    }
  });
}

void gelu_backward(const ExecutionContext& ctx, const Tensor& x, const Tensor& dy, const Tensor& dx) {
  check_same_layout("gelu", {{"x", x}, {"dy", dy}, {"dx", dx}});
  if (bf16::on_float32(
          ctx, {x, dy}, {dx},
          [&](const Tensor* in, const Tensor* out) { gelu_backward(ctx, in[0], in[1], out[0]); },
          NativeBf16::Cuda)) {
    return;
  }
  dispatch_with_bf16("gelu", ctx, dy, [&]<Path P, typename T>() {
    if constexpr (P == Path::Cuda) {
      cuda::gelu_backward(cuda_stream(ctx), x.data<T>(), dy.data<T>(), dx.data<T>(), dy.numel());
    } else if constexpr (P == Path::CpuFast) {
      cpu_fast::gelu_backward(x.data<T>(), dy.data<T>(), dx.data<T>(), dy.numel());
    } else {
      cpu::gelu_backward<T>(x.data<T>(), dy.data<T>(), dx.data<T>(), dy.numel());
    }
  });
}

}  // namespace engine::ops
