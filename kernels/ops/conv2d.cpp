#include "kernels/ops/conv2d.h"

#include "kernels/cpu_fast/conv2d.h"
#include "kernels/cuda/conv2d_cudnn.h"
#include "kernels/cuda/conv2d_implicit_gemm.h"
#include "kernels/ops/autocast_bf16.h"
#include "kernels/ops/dispatch.h"
#include "kernels/ops/nchw_fallback.h"

namespace engine::ops {
namespace {

// What oneDNN is told of x and y (or dy): a one-pixel NCHW side (core/layout.h labels [N, C, 1, 1] NCHW in a
// blocked model) beside a blocked one holds the blocked layout's bytes where its channels fill the blocks,
// and is described so. A mixed pair sends oneDNN 2.6's bf16 primitives to slow kernels (torchvision resnet18
// at 32x32, --precision bf16: 16x the step); all-blocked is the pair measured (benchmarks/RESULTS.md).
Layout onednn_layout(const Tensor& t, const Tensor& other) {
  const int b = layout_block(other.layout());
  const bool same_bytes =
      b != 0 && t.layout() == Layout::NCHW && t.ndim() == 4 && t.dim(2) * t.dim(3) == 1 && t.dim(1) % b == 0;
  return same_bytes ? other.layout() : t.layout();
}
cpu_fast::ConvLayouts onednn_layouts(const Tensor& x, const Tensor& y) {
  return {onednn_layout(x, y), onednn_layout(y, x)};
}

// The kernels' state for the caller's slot: created on first use; null without a slot.
cpu_fast::ConvSaved* saved_state(Conv2dSaved* slot) {
  if (slot == nullptr) return nullptr;
  if (!*slot) *slot = std::make_shared<cpu_fast::ConvSaved>();
  return slot->get();
}

// oneDNN's convolutions take NCHW and the CPU's blocked layouts as they are (cpu_fast::ConvLayouts); NHWC
// goes through the NCHW fallback.
Tensor onednn_in(const NchwFallback& nchw, const Tensor& t) {
  return t.defined() && t.layout() == Layout::NHWC ? nchw.in(t) : t;
}
Tensor onednn_out(NchwFallback& nchw, const Tensor& t) {
  return t.defined() && t.layout() == Layout::NHWC ? nchw.out(t) : t;
}

// The CUDA path of bf16 autocast is cuDNN's bf16 configuration; our implicit-GEMM convolution is float32.
void check_bf16_algorithm(const ExecutionContext& ctx) {
  ENGINE_CHECK(ctx.conv_algorithm == ConvAlgorithm::Cudnn,
               "conv2d: bf16 autocast runs its convolutions on cuDNN; the {} convolution is float32 only",
               conv_algorithm_name(ctx.conv_algorithm));
}

// kernels/ops/autocast_bf16.h: bf16 tensor-core convolutions on CUDA; on the CPU oneDNN's bf16 convolutions
// where the host has avx512_bf16 (cpu_fast::native_bf16; NHWC transposed), else the exact fp32 emulation.
void autocast_forward(const ExecutionContext& ctx, const Conv2dShape& s, const Tensor& x, const Tensor& w,
                      const Tensor& bias, const Tensor& y, const Tensor& w_bf16, Layout layout,
                      Conv2dSaved* saved) {
  if (x.is_cuda()) {
    if constexpr (kHaveCuda) {
      check_bf16_algorithm(ctx);
      const Tensor& wb = autocast::mirror("conv2d", w, w_bf16);
      const Tensor xb = autocast::as_bf16(ctx, x);
      const autocast::RoundedOutput yb(ctx, y, DType::BF16);
      cuda::conv2d_forward_cudnn_bf16(cuda_handles("conv2d", ctx), cuda_stream(ctx), s, xb.data<bfloat16>(),
                                      wb.data<bfloat16>(), data_or_null<float>(bias),
                                      yb.get().data<bfloat16>(), layout);
      yb.finish();
    }
    return;
  }
  if (cpu_fast::native_bf16()) {  // oneDNN's bf16 kernels (avx512_bf16 hosts), NCHW (NHWC transposed)
    const Tensor& wb = autocast::mirror("conv2d", w, w_bf16);
    NchwFallback nchw(ctx);
    const Tensor xb = onednn_in(nchw, autocast::as_bf16(ctx, x)), b = autocast::rounded(ctx, bias);
    const autocast::RoundedOutput yb(ctx, y, DType::BF16);
    const Tensor y_nchw = onednn_out(nchw, yb.get());
    cpu_fast::conv2d_forward_bf16(s, xb.data<bfloat16>(), wb.data<bfloat16>(), data_or_null<float>(b),
                                  y_nchw.data<bfloat16>(), saved_state(saved), onednn_layouts(xb, y_nchw));
    nchw.finish();
    yb.finish();
    return;
  }
  const autocast::RoundedOutput yf(ctx, y, DType::F32);
  conv2d_forward(autocast::fp32(ctx), s, autocast::rounded(ctx, x),
                 autocast::weight("conv2d", ctx, w, w_bf16), autocast::rounded(ctx, bias), yf.get());
  yf.finish();
}

// dx, dW and db are fp32 sums of exact products of bf16 values, rounded to bf16 (autocast's gradients of
// the bf16 copies of x, w and b, cast up into the fp32 dw and db).
void autocast_backward(const ExecutionContext& ctx, const Conv2dShape& s, const Tensor& x, const Tensor& w,
                       const Tensor& dy, const Tensor& dx, const Tensor& dw, const Tensor& db,
                       const Tensor& w_bf16, Layout layout, Conv2dSaved* saved) {
  if (dy.is_cuda()) {
    if constexpr (kHaveCuda) {
      check_bf16_algorithm(ctx);
      const Tensor& wb = autocast::mirror("conv2d", w, w_bf16);
      const Tensor xb = autocast::as_bf16(ctx, x), dyb = autocast::as_bf16(ctx, dy);
      const autocast::RoundedOutput dxb(ctx, dx, DType::BF16);
      cuda::conv2d_backward_cudnn_bf16(cuda_handles("conv2d", ctx), cuda_stream(ctx), s, xb.data<bfloat16>(),
                                       wb.data<bfloat16>(), dyb.data<bfloat16>(),
                                       data_or_null<bfloat16>(dxb.get()), dw.data<float>(),
                                       data_or_null<float>(db), layout);
      dxb.finish();
    }
    return;
  }
  if (cpu_fast::native_bf16()) {
    const Tensor& wb = autocast::mirror("conv2d", w, w_bf16);
    NchwFallback nchw(ctx);
    const Tensor xb = onednn_in(nchw, autocast::as_bf16(ctx, x)),
                 dyb = onednn_in(nchw, autocast::as_bf16(ctx, dy));
    const autocast::RoundedOutput dxb(ctx, dx, DType::BF16);
    const Tensor dx_nchw = onednn_out(nchw, dxb.get());
    cpu_fast::conv2d_backward_bf16(s, xb.data<bfloat16>(), wb.data<bfloat16>(), dyb.data<bfloat16>(),
                                   data_or_null<bfloat16>(dx_nchw), dw.data<float>(), data_or_null<float>(db),
                                   saved_state(saved), onednn_layouts(xb, dyb));
    nchw.finish();
    dxb.finish();
    autocast::round_in_place(ctx, dw);
    autocast::round_in_place(ctx, db);
    return;
  }
  const autocast::RoundedOutput dxf(ctx, dx, DType::F32);
  conv2d_backward(autocast::fp32(ctx), s, autocast::rounded(ctx, x),
                  autocast::weight("conv2d", ctx, w, w_bf16), autocast::rounded(ctx, dy), dxf.get(), dw, db);
  dxf.finish();
  autocast::round_in_place(ctx, dw);
  autocast::round_in_place(ctx, db);
}

// cuDNN takes NHWC (the CUDA path below); the implicit-GEMM convolution, a yardstick for cuDNN, runs NCHW
// only and refuses NHWC rather than hide transposes in its timings. The CPU paths use the NCHW fallback.
void check_algorithm_takes_layout(const char* op, const ExecutionContext& ctx, const Tensor& x) {
  ENGINE_CHECK(
      !(x.is_cuda() && x.layout() == Layout::NHWC && ctx.conv_algorithm == ConvAlgorithm::ImplicitGemm),
      "{}: the implicit-GEMM convolution runs NCHW only, and {} is NHWC (use the cudnn convolution or "
      "the NCHW layout)",
      op, x.str());
}

// The implicit-GEMM convolution is dense: a grouped or dilated shape runs on cuDNN whatever the algorithm
// asked for (the yardstick has nothing to measure there).
bool use_cudnn(const ExecutionContext& ctx, const Conv2dShape& s) {
  return ctx.conv_algorithm == ConvAlgorithm::Cudnn || !s.dense();
}

// A CPU blocked model's convolution (core/layout.h): x and y each NCHW or blocked (the first convolution's
// 3-channel x is NCHW), so same_layout does not apply. oneDNN reads and writes them in place for float32,
// and bf16 where the host has it natively, on dense shapes (the engine's grouped loops are NCHW); every other
// path (the float64 reference, emulated bf16) runs NCHW through the fallback.
bool blocked_call(const Tensor& x, const Tensor& y) {
  return is_blocked(x.layout()) || is_blocked(y.layout());
}

bool onednn_takes_blocked(const ExecutionContext& ctx, const Conv2dShape& s, const Tensor& x,
                          const Tensor& y) {
  const bool nchw_or_blocked = x.layout() != Layout::NHWC && y.layout() != Layout::NHWC;
  const bool onednn = ctx.autocast_bf16 ? cpu_fast::native_bf16() : x.dtype() == DType::F32;
  return !x.is_cuda() && nchw_or_blocked && s.groups == 1 && onednn;
}

}  // namespace

void conv2d_forward(const ExecutionContext& ctx, const Conv2dShape& s, const Tensor& x, const Tensor& w,
                    const Tensor& bias, const Tensor& y, const Tensor& w_bf16, Conv2dSaved* saved) {
  if (blocked_call(x, y)) {
    if (!onednn_takes_blocked(ctx, s, x, y)) {
      NchwFallback nchw(ctx);
      conv2d_forward(ctx, s, nchw.in(x), w, bias, nchw.out(y), w_bf16, saved);
      nchw.finish();
    } else if (ctx.autocast_bf16) {
      autocast_forward(ctx, s, x, w, bias, y, w_bf16, Layout::NCHW, saved);
    } else {
      cpu_fast::conv2d_forward(s, x.data<float>(), w.data<float>(), data_or_null<float>(bias),
                               y.data<float>(), saved_state(saved), onednn_layouts(x, y));
    }
    return;
  }
  const Layout layout = same_layout("conv2d", {{"x", x}, {"y", y}});
  if (ctx.autocast_bf16) {
    autocast_forward(ctx, s, x, w, bias, y, w_bf16, layout, saved);
    return;
  }
  check_algorithm_takes_layout("conv2d", ctx, x);
  if (needs_nchw_fallback(x, /*cuda_has_nhwc=*/true)) {
    NchwFallback nchw(ctx);
    conv2d_forward(ctx, s, nchw.in(x), w, bias, nchw.out(y), Tensor(), saved);
    nchw.finish();
    return;
  }
  dispatch("conv2d", ctx, x, [&]<Path P, typename T>() {
    const T* b = data_or_null<T>(bias);
    if constexpr (P == Path::Cuda) {
      if (use_cudnn(ctx, s)) {
        cuda::conv2d_forward_cudnn(cuda_handles("conv2d", ctx), cuda_stream(ctx), s, x.data<T>(), w.data<T>(),
                                   b, y.data<T>(), layout);
      } else {
        cuda::conv2d_forward_implicit_gemm(cuda_stream(ctx), s, x.data<T>(), w.data<T>(), b, y.data<T>());
      }
    } else if constexpr (P == Path::CpuFast) {
      cpu_fast::conv2d_forward(s, x.data<T>(), w.data<T>(), b, y.data<T>(), saved_state(saved));
    } else {
      cpu::conv2d_forward<T>(s, x.data<T>(), w.data<T>(), b, y.data<T>());
    }
  });
}

void conv2d_backward(const ExecutionContext& ctx, const Conv2dShape& s, const Tensor& x, const Tensor& w,
                     const Tensor& dy, const Tensor& dx, const Tensor& dw, const Tensor& db,
                     const Tensor& w_bf16, Conv2dSaved* saved) {
  if (blocked_call(x, dy)) {
    ENGINE_CHECK(!dx.defined() || dx.layout() == x.layout(), "conv2d: dx {} is not in x {}'s layout",
                 dx.str(), x.str());
    if (!onednn_takes_blocked(ctx, s, x, dy)) {
      NchwFallback nchw(ctx);
      conv2d_backward(ctx, s, nchw.in(x), w, nchw.in(dy), nchw.out(dx), dw, db, w_bf16, saved);
      nchw.finish();
    } else if (ctx.autocast_bf16) {
      autocast_backward(ctx, s, x, w, dy, dx, dw, db, w_bf16, Layout::NCHW, saved);
    } else {
      cpu_fast::conv2d_backward(s, x.data<float>(), w.data<float>(), dy.data<float>(),
                                data_or_null<float>(dx), dw.data<float>(), data_or_null<float>(db),
                                saved_state(saved), onednn_layouts(x, dy));
    }
    return;
  }
  const Layout layout = same_layout("conv2d", {{"x", x}, {"dy", dy}, {"dx", dx}});
  if (ctx.autocast_bf16) {
    autocast_backward(ctx, s, x, w, dy, dx, dw, db, w_bf16, layout, saved);
    return;
  }
  check_algorithm_takes_layout("conv2d", ctx, dy);
  if (needs_nchw_fallback(dy, /*cuda_has_nhwc=*/true)) {
    NchwFallback nchw(ctx);
    conv2d_backward(ctx, s, nchw.in(x), w, nchw.in(dy), nchw.out(dx), dw, db, Tensor(), saved);
    nchw.finish();
    return;
  }
  dispatch("conv2d", ctx, dy, [&]<Path P, typename T>() {
    T* dx_data = data_or_null<T>(dx);
    T* db_data = data_or_null<T>(db);
    if constexpr (P == Path::Cuda) {
      if (use_cudnn(ctx, s)) {
        cuda::conv2d_backward_cudnn(cuda_handles("conv2d", ctx), cuda_stream(ctx), s, x.data<T>(),
                                    w.data<T>(), dy.data<T>(), dx_data, dw.data<T>(), db_data, layout);
      } else {
        cuda::conv2d_backward_implicit_gemm(cuda_stream(ctx), s, x.data<T>(), w.data<T>(), dy.data<T>(),
                                            dx_data, dw.data<T>(), db_data);
      }
    } else if constexpr (P == Path::CpuFast) {
      cpu_fast::conv2d_backward(s, x.data<T>(), w.data<T>(), dy.data<T>(), dx_data, dw.data<T>(), db_data,
                                saved_state(saved));
    } else {
      cpu::conv2d_backward<T>(s, x.data<T>(), w.data<T>(), dy.data<T>(), dx_data, dw.data<T>(), db_data);
    }
  });
}

}  // namespace engine::ops
