#include "kernels/ops/channel_affine.h"

#include "kernels/cpu/channel_affine.h"
#include "kernels/cpu_fast/channel_affine.h"
#include "kernels/cuda/channel_affine.h"
#include "kernels/ops/bf16_storage.h"
#include "kernels/ops/dispatch.h"
#include "kernels/ops/nchw_fallback.h"

namespace engine::ops {

namespace {

// x as [outer, channels, inner] for a parameter of `values` elements: one value spans everything; else the
// channel axis is 1, which memory puts between N and H*W (NCHW, [N, F]) or last (NHWC).
ChannelAffineShape shape_of(const char* op, const Tensor& x, std::int64_t values) {
  if (values == 1) return {1, 1, x.numel()};
  ENGINE_CHECK(x.ndim() >= 2 && x.dim(1) == values, "{}: {} values do not match the channels of x {}", op,
               values, x.str());
  ENGINE_CHECK(!is_blocked(x.layout()), "{}: {} is blocked here (the op converts it to NCHW first)", op,
               x.str());
  if (x.ndim() == 4 && x.layout() == Layout::NHWC) return {x.numel() / values, values, 1};
  return {x.dim(0), values, x.numel() / (x.dim(0) * values)};
}

std::int64_t values_of(const char* op, const Tensor& scale, const Tensor& shift) {
  ENGINE_CHECK(scale.defined() || shift.defined(), "{}: neither a scale nor a shift", op);
  ENGINE_CHECK(!scale.defined() || !shift.defined() || scale.numel() == shift.numel(),
               "{}: scale {} and shift {} differ in size", op, scale.str(), shift.str());
  return scale.defined() ? scale.numel() : shift.numel();
}

}  // namespace

void channel_affine_forward(const ExecutionContext& ctx, const Tensor& x, const Tensor& scale,
                            const Tensor& shift, const Tensor& y) {
  const char* op = "channel_affine_forward";
  check_same_layout(op, {{"x", x}, {"y", y}});
  // Blocked (nChw8c/nChw16c): per-channel values have no stride there, so NCHW between reorders; one value
  // over everything runs in memory order.
  if (is_blocked(x.layout()) && values_of(op, scale, shift) != 1) {
    NchwFallback nchw(ctx);
    channel_affine_forward(ctx, nchw.in(x), scale, shift, nchw.out(y));
    nchw.finish();
    return;
  }
  if (bf16::on_float32(ctx, {x, scale, shift}, {y}, [&](const Tensor* in, const Tensor* out) {
        channel_affine_forward(ctx, in[0], in[1], in[2], out[0]);
      })) {
    return;
  }
  const ChannelAffineShape s = shape_of(op, x, values_of(op, scale, shift));
  dispatch(op, ctx, x, [&]<Path P, typename T>() {
    if constexpr (P == Path::Cuda) {
      cuda::channel_affine_forward(cuda_stream(ctx), s, x.data<T>(), data_or_null<T>(scale),
                                   data_or_null<T>(shift), y.data<T>());
    } else if constexpr (P == Path::CpuFast) {
      cpu_fast::channel_affine_forward(s, x.data<T>(), data_or_null<T>(scale), data_or_null<T>(shift),
                                       y.data<T>());
    } else {
      cpu::channel_affine_forward<T>(s, x.data<T>(), data_or_null<T>(scale), data_or_null<T>(shift),
                                     y.data<T>());
    }
  });
}

void channel_affine_backward(const ExecutionContext& ctx, const Tensor& x, const Tensor& scale,
                             const Tensor& dy, const Tensor& dx, const Tensor& dscale, const Tensor& dshift) {
  const char* op = "channel_affine_backward";
  check_same_layout(op, {{"x", x}, {"dy", dy}, {"dx", dx}});
  const bool per_value = scale.defined() || dscale.defined() || dshift.defined();
  if (is_blocked(dy.layout()) && per_value && values_of(op, scale.defined() ? scale : dscale, dshift) != 1) {
    NchwFallback nchw(ctx);
    channel_affine_backward(ctx, nchw.in(x), scale, nchw.in(dy), nchw.out(dx), dscale, dshift);
    nchw.finish();
    return;
  }
  if (bf16::on_float32(ctx, {x, scale, dy}, {dx, dscale, dshift}, [&](const Tensor* in, const Tensor* out) {
        channel_affine_backward(ctx, in[0], in[1], in[2], out[0], out[1], out[2]);
      })) {
    return;
  }
  // Without a scale and a parameter gradient (dx of an added value), dx = dy over any shape.
  const ChannelAffineShape s =
      shape_of(op, dy, per_value ? values_of(op, scale.defined() ? scale : dscale, dshift) : 1);
  ENGINE_CHECK(!dscale.defined() || x.defined(), "{}: the scale's gradient needs x", op);
  dispatch(op, ctx, dy, [&]<Path P, typename T>() {
    if constexpr (P == Path::Cuda) {
      cuda::channel_affine_backward(cuda_stream(ctx), s, data_or_null<T>(x), data_or_null<T>(scale),
                                    dy.data<T>(), data_or_null<T>(dx), data_or_null<T>(dscale),
                                    data_or_null<T>(dshift));
    } else if constexpr (P == Path::CpuFast) {
      cpu_fast::channel_affine_backward(s, data_or_null<T>(x), data_or_null<T>(scale), dy.data<T>(),
                                        data_or_null<T>(dx), data_or_null<T>(dscale),
                                        data_or_null<T>(dshift));
    } else {
      cpu::channel_affine_backward<T>(s, data_or_null<T>(x), data_or_null<T>(scale), dy.data<T>(),
                                      data_or_null<T>(dx), data_or_null<T>(dscale), data_or_null<T>(dshift));
    }
  });
}

}  // namespace engine::ops
