#include "kernels/ops/dropout.h"

#include "kernels/cpu/dropout.h"
#include "kernels/cpu_fast/dropout.h"
#include "kernels/cuda/dropout.h"
#include "kernels/ops/dispatch.h"

namespace engine::ops {

void dropout_forward(const ExecutionContext& ctx, double p, std::uint64_t seed, std::uint64_t offset,
                     const Tensor& x, const Tensor& y) {
  check_same_layout("dropout", {{"x", x}, {"y", y}});
  dispatch("dropout", ctx, x, [&]<Path P, typename T>() {
    if constexpr (P == Path::Cuda) {
      cuda::dropout_forward(cuda_stream(ctx), p, seed, offset, x.data<T>(), y.data<T>(), x.numel());
    } else if constexpr (P == Path::CpuFast) {
      cpu_fast::dropout_forward(p, seed, offset, x.data<T>(), y.data<T>(), x.numel());
    } else {
      cpu::dropout_forward<T>(p, seed, offset, x.data<T>(), y.data<T>(), x.numel());
    }
  });
}

void dropout_backward(const ExecutionContext& ctx, double p, std::uint64_t seed, std::uint64_t offset,
                      const Tensor& dy, const Tensor& dx) {
  check_same_layout("dropout", {{"dy", dy}, {"dx", dx}});
  dispatch("dropout", ctx, dy, [&]<Path P, typename T>() {
    if constexpr (P == Path::Cuda) {
      cuda::dropout_backward(cuda_stream(ctx), p, seed, offset, dy.data<T>(), dx.data<T>(), dy.numel());
    } else if constexpr (P == Path::CpuFast) {
      cpu_fast::dropout_backward(p, seed, offset, dy.data<T>(), dx.data<T>(), dy.numel());
    } else {
      cpu::dropout_backward<T>(p, seed, offset, dy.data<T>(), dx.data<T>(), dy.numel());
    }
  });
}

}  // namespace engine::ops
