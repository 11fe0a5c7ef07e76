#include "kernels/ops/dropout.h"

#include "core/error.h"
#include "kernels/cpu/dropout.h"
#include "kernels/cpu_fast/dropout.h"
#include "kernels/cuda/dropout.h"
#include "kernels/ops/bf16_storage.h"
#include "kernels/ops/dispatch.h"

namespace engine::ops {

using bf16::NativeBf16;

void dropout_forward(const ExecutionContext& ctx, double p, std::uint64_t seed, std::uint64_t offset,
                     const Tensor& x, const Tensor& y, const std::uint64_t* offset_base) {
  check_same_layout("dropout", {{"x", x}, {"y", y}});
  ENGINE_CHECK(offset_base == nullptr || ctx.device.is_cuda(),
               "dropout: a device offset base needs a CUDA device, not {}", ctx.device.str());
  if (bf16::on_float32(
          ctx, {x}, {y},
          [&](const Tensor* in, const Tensor* out) {
            dropout_forward(ctx, p, seed, offset, in[0], out[0], offset_base);
          },
          NativeBf16::Cuda)) {
    return;
  }
  dispatch_with_bf16("dropout", ctx, x, [&]<Path P, typename T>() {
    if constexpr (P == Path::Cuda) {
      cuda::dropout_forward(cuda_stream(ctx), p, seed, offset, x.data<T>(), y.data<T>(), x.numel(),
                            offset_base);
    } else if constexpr (P == Path::CpuFast) {
      cpu_fast::dropout_forward(p, seed, offset, x.data<T>(), y.data<T>(), x.numel());
    } else {
      cpu::dropout_forward<T>(p, seed, offset, x.data<T>(), y.data<T>(), x.numel());
    }
  });
}

void dropout_backward(const ExecutionContext& ctx, double p, std::uint64_t seed, std::uint64_t offset,
                      const Tensor& dy, const Tensor& dx, const std::uint64_t* offset_base) {
  check_same_layout("dropout", {{"dy", dy}, {"dx", dx}});
  ENGINE_CHECK(offset_base == nullptr || ctx.device.is_cuda(),
               "dropout: a device offset base needs a CUDA device, not {}", ctx.device.str());
  if (bf16::on_float32(
          ctx, {dy}, {dx},
          [&](const Tensor* in, const Tensor* out) {
            dropout_backward(ctx, p, seed, offset, in[0], out[0], offset_base);
          },
          NativeBf16::Cuda)) {
    return;
  }
  dispatch_with_bf16("dropout", ctx, dy, [&]<Path P, typename T>() {
    if constexpr (P == Path::Cuda) {
      cuda::dropout_backward(cuda_stream(ctx), p, seed, offset, dy.data<T>(), dx.data<T>(), dy.numel(),
                             offset_base);
    } else if constexpr (P == Path::CpuFast) {
      cpu_fast::dropout_backward(p, seed, offset, dy.data<T>(), dx.data<T>(), dy.numel());
    } else {
      cpu::dropout_backward<T>(p, seed, offset, dy.data<T>(), dx.data<T>(), dy.numel());
    }
  });
}

}  // namespace engine::ops
