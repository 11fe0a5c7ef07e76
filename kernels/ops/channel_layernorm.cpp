#include "kernels/ops/channel_layernorm.h"

#include "kernels/cpu/channel_layernorm.h"
#include "kernels/cpu_fast/channel_layernorm.h"
#include "kernels/cuda/channel_layernorm.h"
#include "kernels/ops/bf16_storage.h"
#include "kernels/ops/dispatch.h"
#include "kernels/ops/nchw_fallback.h"

namespace engine::ops {

namespace {

// x as [outer, channels, inner]: the channel axis 1 sits between N and H*W (NCHW, [N, F]) or last (NHWC).
ChannelAffineShape shape_of(const char* op, const Tensor& x, const Tensor& gamma, const Tensor& beta) {
  ENGINE_CHECK(x.ndim() == 4 || x.ndim() == 2, "{}: x {} is not [N, C, H, W] or [N, F]", op, x.str());
  const std::int64_t c = x.dim(1);
  for (const Tensor* t : {&gamma, &beta}) {
    ENGINE_CHECK(!t->defined() || t->numel() == c, "{}: {} values do not match the {} channels of x {}", op,
                 t->numel(), c, x.str());
  }
  ENGINE_CHECK(!is_blocked(x.layout()), "{}: {} is blocked here (the op converts it to NCHW first)", op,
               x.str());
  if (x.ndim() == 4 && x.layout() == Layout::NHWC) return {x.numel() / c, c, 1};
  return {x.dim(0), c, x.numel() / (x.dim(0) * c)};
}

}  // namespace

void channel_layernorm_forward(const ExecutionContext& ctx, double eps, const Tensor& x, const Tensor& gamma,
                               const Tensor& beta, const Tensor& y) {
  const char* op = "channel_layernorm_forward";
  check_same_layout(op, {{"x", x}, {"y", y}});
  if (is_blocked(x.layout())) {  // statistics across a pixel's channels: NCHW between reorders
    NchwFallback nchw(ctx);
    channel_layernorm_forward(ctx, eps, nchw.in(x), gamma, beta, nchw.out(y));
    nchw.finish();
    return;
  }
  if (bf16::on_float32(ctx, {x, gamma, beta}, {y}, [&](const Tensor* in, const Tensor* out) {
        channel_layernorm_forward(ctx, eps, in[0], in[1], in[2], out[0]);
      })) {
    return;
  }
  const ChannelAffineShape s = shape_of(op, x, gamma, beta);
  dispatch(op, ctx, x, [&]<Path P, typename T>() {
    if constexpr (P == Path::Cuda) {
      cuda::channel_layernorm_forward(cuda_stream(ctx), s, eps, x.data<T>(), data_or_null<T>(gamma),
                                      data_or_null<T>(beta), y.data<T>());
    } else if constexpr (P == Path::CpuFast) {
      cpu_fast::channel_layernorm_forward(s, eps, x.data<T>(), data_or_null<T>(gamma), data_or_null<T>(beta),
                                          y.data<T>());
    } else {
      cpu::channel_layernorm_forward<T>(s, eps, x.data<T>(), data_or_null<T>(gamma), data_or_null<T>(beta),
                                        y.data<T>());
    }
  });
}

void channel_layernorm_backward(const ExecutionContext& ctx, double eps, const Tensor& x, const Tensor& gamma,
                                const Tensor& dy, const Tensor& dx, const Tensor& dgamma,
                                const Tensor& dbeta) {
  const char* op = "channel_layernorm_backward";
  check_same_layout(op, {{"x", x}, {"dy", dy}, {"dx", dx}});
  if (is_blocked(x.layout())) {
    NchwFallback nchw(ctx);
    channel_layernorm_backward(ctx, eps, nchw.in(x), gamma, nchw.in(dy), nchw.out(dx), dgamma, dbeta);
    nchw.finish();
    return;
  }
  if (bf16::on_float32(ctx, {x, gamma, dy}, {dx, dgamma, dbeta}, [&](const Tensor* in, const Tensor* out) {
        channel_layernorm_backward(ctx, eps, in[0], in[1], in[2], out[0], out[1], out[2]);
      })) {
    return;
  }
  const ChannelAffineShape s = shape_of(op, x, gamma.defined() ? gamma : dgamma, dbeta);
  dispatch(op, ctx, dy, [&]<Path P, typename T>() {
    if constexpr (P == Path::Cuda) {
      cuda::channel_layernorm_backward(cuda_stream(ctx), s, eps, x.data<T>(), data_or_null<T>(gamma),
                                       dy.data<T>(), data_or_null<T>(dx), data_or_null<T>(dgamma),
                                       data_or_null<T>(dbeta));
    } else if constexpr (P == Path::CpuFast) {
      cpu_fast::channel_layernorm_backward(s, eps, x.data<T>(), data_or_null<T>(gamma), dy.data<T>(),
                                           data_or_null<T>(dx), data_or_null<T>(dgamma),
                                           data_or_null<T>(dbeta));
    } else {
      cpu::channel_layernorm_backward<T>(s, eps, x.data<T>(), data_or_null<T>(gamma), dy.data<T>(),
                                         data_or_null<T>(dx), data_or_null<T>(dgamma),
                                         data_or_null<T>(dbeta));
    }
  });
}

}  // namespace engine::ops
