#include "kernels/ops/global_avgpool.h"

#include "kernels/cpu/avgpool.h"
#include "kernels/cpu_fast/global_avgpool.h"
#include "kernels/cuda/avgpool.h"
#include "kernels/ops/bf16_storage.h"
#include "kernels/ops/dispatch.h"
#include "kernels/ops/nchw_fallback.h"

namespace engine::ops {

using bf16::NativeBf16;

void global_avgpool_forward(const ExecutionContext& ctx, const Tensor& x, const Tensor& y) {
  if (bf16::on_float32(
          ctx, {x}, {y},
          [&](const Tensor* in, const Tensor* out) { global_avgpool_forward(ctx, in[0], out[0]); },
          NativeBf16::Cuda)) {
    return;
  }
  const Shape& s = x.shape();
  const int n = to_int(s[0]), c = to_int(s[1]), h = to_int(s[2]), w = to_int(s[3]);
  if (needs_nchw_fallback(x, /*cuda_has_nhwc=*/true)) {
    NchwFallback nchw(ctx);
    global_avgpool_forward(ctx, nchw.in(x), y);
    return;
  }
  dispatch_with_bf16("global_avgpool", ctx, x, [&]<Path P, typename T>() {
    if constexpr (P == Path::Cuda) {
      cuda::global_avgpool_forward(cuda_stream(ctx), n, c, h, w, x.data<T>(), y.data<T>(), x.layout());
    } else if constexpr (P == Path::CpuFast) {
      cpu_fast::global_avgpool_forward(n, c, h, w, x.data<T>(), y.data<T>());
    } else {
      cpu::global_avgpool_forward<T>(n, c, h, w, x.data<T>(), y.data<T>());
    }
  });
}

void global_avgpool_backward(const ExecutionContext& ctx, const Tensor& dy, const Tensor& dx) {
  if (bf16::on_float32(
          ctx, {dy}, {dx},
          [&](const Tensor* in, const Tensor* out) { global_avgpool_backward(ctx, in[0], out[0]); },
          NativeBf16::Cuda)) {
    return;
  }
  const Shape& s = dx.shape();
  const int n = to_int(s[0]), c = to_int(s[1]), h = to_int(s[2]), w = to_int(s[3]);
  if (needs_nchw_fallback(dx, /*cuda_has_nhwc=*/true)) {
    NchwFallback nchw(ctx);
    global_avgpool_backward(ctx, dy, nchw.out(dx));
    nchw.finish();
    return;
  }
  dispatch_with_bf16("global_avgpool", ctx, dy, [&]<Path P, typename T>() {
    if constexpr (P == Path::Cuda) {
      cuda::global_avgpool_backward(cuda_stream(ctx), n, c, h, w, dy.data<T>(), dx.data<T>(), dx.layout());
    } else if constexpr (P == Path::CpuFast) {
      cpu_fast::global_avgpool_backward(n, c, h, w, dy.data<T>(), dx.data<T>());
    } else {
      cpu::global_avgpool_backward<T>(n, c, h, w, dy.data<T>(), dx.data<T>());
    }
  });
}

}  // namespace engine::ops
