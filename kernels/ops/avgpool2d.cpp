#include "kernels/ops/avgpool2d.h"

#include "kernels/cpu/avgpool2d.h"
#include "kernels/cpu_fast/avgpool2d.h"
#include "kernels/cuda/avgpool2d.h"
#include "kernels/ops/bf16_storage.h"
#include "kernels/ops/dispatch.h"
#include "kernels/ops/nchw_fallback.h"

namespace engine::ops {

using bf16::NativeBf16;

void avgpool2d_forward(const ExecutionContext& ctx, const AvgPool2dShape& s, const Tensor& x,
                       const Tensor& y) {
  const bool one_pixel = blocked_beside_nchw(x, y);  // both branches convert: checked before same_layout
  const Layout layout = one_pixel ? Layout::NCHW : same_layout("avgpool2d", {{"x", x}, {"y", y}});
  if (one_pixel || needs_nchw_fallback(x, /*cuda_has_nhwc=*/true)) {
    NchwFallback nchw(ctx);
    avgpool2d_forward(ctx, s, nchw.in(x), nchw.out(y));
    nchw.finish();
    return;
  }
  if (bf16::on_float32(
          ctx, {x}, {y},
          [&](const Tensor* in, const Tensor* out) { avgpool2d_forward(ctx, s, in[0], out[0]); },
          NativeBf16::Cuda)) {
    return;
  }
  dispatch_with_bf16("avgpool2d", ctx, x, [&]<Path P, typename T>() {
    if constexpr (P == Path::Cuda) {
      cuda::avgpool2d_forward(cuda_stream(ctx), s, x.data<T>(), y.data<T>(), layout);
    } else if constexpr (P == Path::CpuFast) {
      cpu_fast::avgpool2d_forward(s, x.data<T>(), y.data<T>());
    } else {
      cpu::avgpool2d_forward<T>(s, x.data<T>(), y.data<T>());
    }
  });
}

void avgpool2d_backward(const ExecutionContext& ctx, const AvgPool2dShape& s, const Tensor& dy,
                        const Tensor& dx) {
  const bool one_pixel = blocked_beside_nchw(dy, dx);
  const Layout layout = one_pixel ? Layout::NCHW : same_layout("avgpool2d", {{"dy", dy}, {"dx", dx}});
  if (one_pixel || needs_nchw_fallback(dy, /*cuda_has_nhwc=*/true)) {
    NchwFallback nchw(ctx);
    avgpool2d_backward(ctx, s, nchw.in(dy), nchw.out(dx));
    nchw.finish();
    return;
  }
  if (bf16::on_float32(
          ctx, {dy}, {dx},
          [&](const Tensor* in, const Tensor* out) { avgpool2d_backward(ctx, s, in[0], out[0]); },
          NativeBf16::Cuda)) {
    return;
  }
  dispatch_with_bf16("avgpool2d", ctx, dy, [&]<Path P, typename T>() {
    if constexpr (P == Path::Cuda) {
      cuda::avgpool2d_backward(cuda_stream(ctx), s, dy.data<T>(), dx.data<T>(), layout);
    } else if constexpr (P == Path::CpuFast) {
      cpu_fast::avgpool2d_backward(s, dy.data<T>(), dx.data<T>());
    } else {
      cpu::avgpool2d_backward<T>(s, dy.data<T>(), dx.data<T>());
    }
  });
}

}  // namespace engine::ops
