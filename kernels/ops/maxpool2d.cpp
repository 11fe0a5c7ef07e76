#include "kernels/ops/maxpool2d.h"

#include <cstdint>

#include "kernels/cpu_fast/maxpool2d.h"
#include "kernels/cuda/maxpool2d.h"
#include "kernels/ops/bf16_storage.h"
#include "kernels/ops/dispatch.h"

namespace engine::ops {

using bf16::NativeBf16;

void maxpool2d_forward(const ExecutionContext& ctx, const Pool2dShape& s, const Tensor& x, const Tensor& y,
                       const Tensor& argmax) {
  if (bf16::on_float32(
          ctx, {x}, {y},
          [&](const Tensor* in, const Tensor* out) { maxpool2d_forward(ctx, s, in[0], out[0], argmax); },
          NativeBf16::Cuda)) {
    return;
  }
  dispatch_with_bf16("maxpool2d", ctx, x, [&]<Path P, typename T>() {
    auto* am = argmax.data<std::int32_t>();
    if constexpr (P == Path::Cuda) {
      cuda::maxpool2d_forward(cuda_stream(ctx), s, x.data<T>(), y.data<T>(), am);
    } else if constexpr (P == Path::CpuFast) {
      cpu_fast::maxpool2d_forward(s, x.data<T>(), y.data<T>(), am);
    } else {
      cpu::maxpool2d_forward<T>(s, x.data<T>(), y.data<T>(), am);
    }
  });
}

void maxpool2d_backward(const ExecutionContext& ctx, const Pool2dShape& s, const Tensor& dy,
                        const Tensor& argmax, const Tensor& dx) {
  if (bf16::on_float32(
          ctx, {dy}, {dx},
          [&](const Tensor* in, const Tensor* out) { maxpool2d_backward(ctx, s, in[0], argmax, out[0]); },
          NativeBf16::Cuda)) {
    return;
  }
  dispatch_with_bf16("maxpool2d", ctx, dy, [&]<Path P, typename T>() {
    const auto* am = argmax.data<std::int32_t>();
    if constexpr (P == Path::Cuda) {
      cuda::maxpool2d_backward(cuda_stream(ctx), s, dy.data<T>(), am, dx.data<T>());
    } else if constexpr (P == Path::CpuFast) {
      cpu_fast::maxpool2d_backward(s, dy.data<T>(), am, dx.data<T>());
    } else {
      cpu::maxpool2d_backward<T>(s, dy.data<T>(), am, dx.data<T>());
    }
  });
}

}  // namespace engine::ops
