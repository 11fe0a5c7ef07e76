#include "kernels/ops/gelu.h"

#include "kernels/cpu/gelu.h"
#include "kernels/cpu_fast/gelu.h"
#include "kernels/cuda/gelu.h"
#include "kernels/ops/dispatch.h"

namespace engine::ops {

void gelu_forward(const ExecutionContext& ctx, const Tensor& x, const Tensor& y) {
  check_same_layout("gelu", {{"x", x}, {"y", y}});
  dispatch("gelu", ctx, x, [&]<Path P, typename T>() {
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
  dispatch("gelu", ctx, dy, [&]<Path P, typename T>() {
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
