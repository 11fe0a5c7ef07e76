#include "kernels/ops/maxpool2d.h"

#include <cstdint>

#include "kernels/cpu_fast/maxpool2d.h"
#include "kernels/cpu_fast/maxpool2d_blocked.h"
#include "kernels/cuda/maxpool2d.h"
#include "kernels/ops/bf16_storage.h"
#include "kernels/ops/dispatch.h"
#include "kernels/ops/nchw_fallback.h"

namespace engine::ops {

using bf16::NativeBf16;

void maxpool2d_forward(const ExecutionContext& ctx, const Pool2dShape& s, const Tensor& x, const Tensor& y,
                       const Tensor& argmax) {
  const bool one_pixel = blocked_beside_nchw(x, y);  // both branches convert: checked before same_layout
  const Layout layout =
      one_pixel ? Layout::NCHW : same_layout("maxpool2d", {{"x", x}, {"y", y}, {"argmax", argmax}});
  if (one_pixel || needs_nchw_fallback(x, /*cuda_has_nhwc=*/true, /*has_blocked=*/x.dtype() != DType::F64)) {
    // argmax holds the cell of the (n, c) plane in either layout: its values need no change, only its order.
    NchwFallback nchw(ctx);
    maxpool2d_forward(ctx, s, nchw.in(x), nchw.out(y), nchw.out(argmax));
    nchw.finish();
    return;
  }
  if (bf16::on_float32(
          ctx, {x}, {y},
          [&](const Tensor* in, const Tensor* out) { maxpool2d_forward(ctx, s, in[0], out[0], argmax); },
          NativeBf16::CudaAndCpu)) {
    return;
  }
  dispatch_with_bf16<true>("maxpool2d", ctx, x, [&]<Path P, typename T>() {
    auto* am = argmax.data<std::int32_t>();
    if constexpr (P == Path::Cuda) {
      cuda::maxpool2d_forward(cuda_stream(ctx), s, x.data<T>(), y.data<T>(), am, layout);
    } else if constexpr (P == Path::CpuFast) {
      if (is_blocked(layout)) {  // the fast kernels take the blocked layouts; the reference runs NCHW
        cpu_fast::maxpool2d_forward_blocked(layout_block(layout), s, x.data<T>(), y.data<T>(), am);
        return;
      }
      cpu_fast::maxpool2d_forward(s, x.data<T>(), y.data<T>(), am);
    } else {
      cpu::maxpool2d_forward<T>(s, x.data<T>(), y.data<T>(), am);
    }
  });
}

void maxpool2d_backward(const ExecutionContext& ctx, const Pool2dShape& s, const Tensor& dy,
                        const Tensor& argmax, const Tensor& dx) {
  const bool one_pixel = blocked_beside_nchw(dy, dx);
  const Layout layout =
      one_pixel ? Layout::NCHW : same_layout("maxpool2d", {{"dy", dy}, {"argmax", argmax}, {"dx", dx}});
  if (one_pixel ||
      needs_nchw_fallback(dy, /*cuda_has_nhwc=*/true, /*has_blocked=*/dy.dtype() != DType::F64)) {
    NchwFallback nchw(ctx);
    maxpool2d_backward(ctx, s, nchw.in(dy), nchw.in(argmax), nchw.out(dx));
    nchw.finish();
    return;
  }
  if (bf16::on_float32(
          ctx, {dy}, {dx},
          [&](const Tensor* in, const Tensor* out) { maxpool2d_backward(ctx, s, in[0], argmax, out[0]); },
          NativeBf16::CudaAndCpu)) {
    return;
  }
  dispatch_with_bf16<true>("maxpool2d", ctx, dy, [&]<Path P, typename T>() {
    const auto* am = argmax.data<std::int32_t>();
    if constexpr (P == Path::Cuda) {
      cuda::maxpool2d_backward(cuda_stream(ctx), s, dy.data<T>(), am, dx.data<T>(), layout);
    } else if constexpr (P == Path::CpuFast) {
      if (is_blocked(layout)) {
        cpu_fast::maxpool2d_backward_blocked(layout_block(layout), s, dy.data<T>(), am, dx.data<T>());
        return;
      }
      cpu_fast::maxpool2d_backward(s, dy.data<T>(), am, dx.data<T>());
    } else {
      cpu::maxpool2d_backward<T>(s, dy.data<T>(), am, dx.data<T>());
    }
  });
}

}  // namespace engine::ops
