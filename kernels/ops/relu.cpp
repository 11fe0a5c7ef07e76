#include "kernels/ops/relu.h"

#include "kernels/cpu/relu.h"
#include "kernels/cpu_fast/relu.h"
#include "kernels/cuda/relu.h"
#include "kernels/ops/bf16_storage.h"
#include "kernels/ops/dispatch.h"

namespace engine::ops {

using bf16::NativeBf16;

void relu_forward(const ExecutionContext& ctx, const Tensor& x, const Tensor& y) {
  check_same_layout("relu", {{"x", x}, {"y", y}});
  if (bf16::on_float32(
          ctx, {x}, {y}, [&](const Tensor* in, const Tensor* out) { relu_forward(ctx, in[0], out[0]); },
          NativeBf16::CudaAndCpu)) {
    return;
  }
  dispatch_with_bf16<true>("relu", ctx, x, [&]<Path P, typename T>() {
    if constexpr (P == Path::Cuda) {
      cuda::relu_forward(cuda_stream(ctx), x.data<T>(), y.data<T>(), x.numel());
    } else if constexpr (P == Path::CpuFast) {
      cpu_fast::relu_forward(x.data<T>(), y.data<T>(), x.numel());
    } else {
      cpu::relu_forward<T>(x.data<T>(), y.data<T>(), x.numel());
    }
  });
}

void relu_backward(const ExecutionContext& ctx, const Tensor& x, const Tensor& dy, const Tensor& dx) {
  check_same_layout("relu", {{"x", x}, {"dy", dy}, {"dx", dx}});
  if (bf16::on_float32(
          ctx, {x, dy}, {dx},
          [&](const Tensor* in, const Tensor* out) { relu_backward(ctx, in[0], in[1], out[0]); },
          NativeBf16::CudaAndCpu)) {
    return;
  }
  dispatch_with_bf16<true>("relu", ctx, dy, [&]<Path P, typename T>() {
    if constexpr (P == Path::Cuda) {
      cuda::relu_backward(cuda_stream(ctx), x.data<T>(), dy.data<T>(), dx.data<T>(), dy.numel());
    } else if constexpr (P == Path::CpuFast) {
      cpu_fast::relu_backward(x.data<T>(), dy.data<T>(), dx.data<T>(), dy.numel());
    } else {
      cpu::relu_backward<T>(x.data<T>(), dy.data<T>(), dx.data<T>(), dy.numel());
    }
  });
}

}  // namespace engine::ops
