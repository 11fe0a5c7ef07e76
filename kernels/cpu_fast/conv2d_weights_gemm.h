#pragma once
// A dense convolution's weight gradient as GEMMs: dw[K, C R S] = dY[K, N P Q] x col(x)[N P Q, C R S], where
// col(x) is x's im2col (row (c, r, s), column (n, p, q): x[n, c, p sh - ph + r dh, q sw - pw + s dw], zero in
// the padding) and dY is dy with its batch and channel axes swapped. Both are copied for a chunk of the batch
// at a time (col(x) bounded by kColBudgetBytes), and each chunk's product is added to dw in float32 by the
// GEMM itself: oneDNN's bf16 matmul (gemm.h's gemm_bf16: bf16 operands, float32 products and sums) for bf16
// x and dy, dnnl_sgemm for float32. db (may be null) sums dy per channel: per-sample float32 plane sums in
// double.
//
// Memory: col(x) stays under kColBudgetBytes, dY's copy is K / (C R S) of it; both are kept by the calling
// thread for its next call.
//
// Why: oneDNN 2.6.3's bf16 backward-weights on strided 3x3 convolutions and 3x3 outputs under 8x8 falls apart
// beside another process, and its float32 kernel on x and dy widened from bf16 (which ran there before) took
// 1.5-1.9x this GEMM's time at resnet18's shapes (batch 64). weights_grad_gemm's rule comes from the
// per-layer figures in benchmarks/RESULTS.md (2026-11-29 03:30), quiet and loaded. The float32 variant lost
// to oneDNN's direct float32 kernel there: only the benchmark runs it (set_weights_gemm), to measure that
// again.

#include "core/dtype.h"
#include "core/layout.h"
#include "kernels/shapes.h"

namespace engine::cpu_fast {

// The most bytes one chunk's col(x) takes (the batch is split so that it fits; one sample at least).
inline constexpr long kColBudgetBytes = 16L << 20;

// Whether conv2d.cpp's backward computes dw of `g` here (bf16: x and dy bf16; else float32): the measured
// rule (conv2d_weights_gemm.cpp), unless a benchmark forced the choice (set_weights_gemm).
bool weights_grad_gemm(const Conv2dShape& g, bool bf16);

// For the benchmarks and the tests: the rule, or every dense shape through the GEMM, or none.
enum class WeightsGemm { Rule, Always, Never };
void set_weights_gemm(WeightsGemm w);

// The layouts of x and dy: NCHW, or a blocked layout (nChw16c, nChw8c) whose blocks the channels fill; the
// im2col and dY's copy read either in place (no reorder), so the blocked activations take this GEMM as well.
struct GemmLayouts {
  Layout x = Layout::NCHW, dy = Layout::NCHW;
};

// Dense convolutions only (one group); any stride, padding and dilation. dw and db overwritten.
// col_budget_bytes: the chunks' bound (the tests make it small to check the sums across chunks).
void conv2d_weights_gemm(const Conv2dShape& g, const float* x, const float* dy, float* dw, float* db,
                         GemmLayouts layouts = {}, long col_budget_bytes = kColBudgetBytes);
void conv2d_weights_gemm(const Conv2dShape& g, const bfloat16* x, const bfloat16* dy, float* dw, float* db,
                         GemmLayouts layouts = {}, long col_budget_bytes = kColBudgetBytes);

}  // namespace engine::cpu_fast
