#include "kernels/ops/linear.h"

#include "kernels/cpu_fast/conv2d.h"
#include "kernels/cpu_fast/linear.h"
#include "kernels/cuda/linear.h"
#include "kernels/ops/autocast_bf16.h"
#include "kernels/ops/dispatch.h"

namespace engine::ops {
namespace {

// kernels/ops/autocast_bf16.h: bf16 tensor-core GEMMs on CUDA; on the CPU oneDNN's bf16 matmul where the host
// has avx512_bf16 (cpu_fast::native_bf16), else the exact fp32 emulation.
void autocast_forward(const ExecutionContext& ctx, const LinearShape& s, const Tensor& x, const Tensor& w,
                      const Tensor& bias, const Tensor& y, const Tensor& w_bf16) {
  if (x.is_cuda()) {
    if constexpr (kHaveCuda) {
      const Tensor& wb = autocast::mirror("linear", w, w_bf16);
      const Tensor xb = autocast::as_bf16(ctx, x);
      const autocast::RoundedOutput yb(ctx, y, DType::BF16);
      cuda::linear_forward_bf16(cuda_handles("linear", ctx), cuda_stream(ctx), s, xb.data<bfloat16>(),
                                wb.data<bfloat16>(), data_or_null<float>(bias), yb.get().data<bfloat16>());
      yb.finish();
    }
    return;
  }
  if (cpu_fast::native_bf16()) {
    const Tensor& wb = autocast::mirror("linear", w, w_bf16);
    const Tensor xb = autocast::as_bf16(ctx, x), b = autocast::rounded(ctx, bias);
    const autocast::RoundedOutput yf(ctx, y, DType::F32);
    cpu_fast::linear_forward(s, xb.data<bfloat16>(), wb.data<bfloat16>(), data_or_null<float>(b),
                             yf.get().data<float>());
    yf.finish();
    return;
  }
  const autocast::RoundedOutput yf(ctx, y, DType::F32);
  linear_forward(autocast::fp32(ctx), s, autocast::rounded(ctx, x),
                 autocast::weight("linear", ctx, w, w_bf16), autocast::rounded(ctx, bias), yf.get());
  yf.finish();
}

// dx, dW and db are fp32 sums of exact products of bf16 values, rounded to bf16 (autocast's gradients of
// the bf16 copies of x, w and b, cast up into the fp32 dw and db).
void autocast_backward(const ExecutionContext& ctx, const LinearShape& s, const Tensor& x, const Tensor& w,
                       const Tensor& dy, const Tensor& dx, const Tensor& dw, const Tensor& db,
                       const Tensor& w_bf16) {
  if (dy.is_cuda()) {
    if constexpr (kHaveCuda) {
      const Tensor& wb = autocast::mirror("linear", w, w_bf16);
      const Tensor xb = autocast::as_bf16(ctx, x), dyb = autocast::as_bf16(ctx, dy);
      const autocast::RoundedOutput dxb(ctx, dx, DType::BF16);
      cuda::linear_backward_bf16(cuda_handles("linear", ctx), cuda_stream(ctx), s, xb.data<bfloat16>(),
                                 wb.data<bfloat16>(), dyb.data<bfloat16>(), data_or_null<bfloat16>(dxb.get()),
                                 dw.data<float>(), data_or_null<float>(db));
      dxb.finish();
    }
    return;
  }
  const autocast::RoundedOutput dxf(ctx, dx, DType::F32);
  if (cpu_fast::native_bf16()) {
    const Tensor& wb = autocast::mirror("linear", w, w_bf16);
    const Tensor xb = autocast::as_bf16(ctx, x), dyb = autocast::as_bf16(ctx, dy);
    cpu_fast::linear_backward(s, xb.data<bfloat16>(), wb.data<bfloat16>(), dyb.data<bfloat16>(),
                              data_or_null<float>(dxf.get()), dw.data<float>(), data_or_null<float>(db));
  } else {
    linear_backward(autocast::fp32(ctx), s, autocast::rounded(ctx, x),
                    autocast::weight("linear", ctx, w, w_bf16), autocast::rounded(ctx, dy), dxf.get(), dw,
                    db);
  }
  dxf.finish();
  autocast::round_in_place(ctx, dw);
  autocast::round_in_place(ctx, db);
}

}  // namespace

void linear_forward(const ExecutionContext& ctx, const LinearShape& s, const Tensor& x, const Tensor& w,
                    const Tensor& bias, const Tensor& y, const Tensor& w_bf16) {
  if (ctx.autocast_bf16) {
    autocast_forward(ctx, s, x, w, bias, y, w_bf16);
    return;
  }
  dispatch("linear", ctx, x, [&]<Path P, typename T>() {
    const T* b = data_or_null<T>(bias);
    if constexpr (P == Path::Cuda) {
      cuda::linear_forward(cuda_handles("linear", ctx), cuda_stream(ctx), s, x.data<T>(), w.data<T>(), b,
                           y.data<T>());
    } else if constexpr (P == Path::CpuFast) {
      cpu_fast::linear_forward(s, x.data<T>(), w.data<T>(), b, y.data<T>());
    } else {
      cpu::linear_forward<T>(s, x.data<T>(), w.data<T>(), b, y.data<T>());
    }
  });
}

void linear_backward(const ExecutionContext& ctx, const LinearShape& s, const Tensor& x, const Tensor& w,
                     const Tensor& dy, const Tensor& dx, const Tensor& dw, const Tensor& db,
                     const Tensor& w_bf16) {
  if (ctx.autocast_bf16) {
    autocast_backward(ctx, s, x, w, dy, dx, dw, db, w_bf16);
    return;
  }
  dispatch("linear", ctx, dy, [&]<Path P, typename T>() {
    T* dx_data = data_or_null<T>(dx);
    T* db_data = data_or_null<T>(db);
    if constexpr (P == Path::Cuda) {
      cuda::linear_backward(cuda_handles("linear", ctx), cuda_stream(ctx), s, x.data<T>(), w.data<T>(),
                            dy.data<T>(), dx_data, dw.data<T>(), db_data);
    } else if constexpr (P == Path::CpuFast) {
      cpu_fast::linear_backward(s, x.data<T>(), w.data<T>(), dy.data<T>(), dx_data, dw.data<T>(), db_data);
    } else {
      cpu::linear_backward<T>(s, x.data<T>(), w.data<T>(), dy.data<T>(), dx_data, dw.data<T>(), db_data);
    }
  });
}

}  // namespace engine::ops
