#pragma once
// A dense convolution's weight gradient as GEMMs: dw[K, C R S] = dY[K, N P Q] x col(x)[N P Q, C R S], where
// col(x) is x's im2col (row (c, r, s), column (n, p, q): x[n, c, p sh - ph + r dh, q sw - pw + s dw], zero in
// the padding) and dY is dy with its batch and channel axes swapped. Both are copied for a chunk of the batch
// at a time (col(x) bounded by kColBudgetBytes), and each chunk's product is added to dw in float32 by the
// GEMM itself: oneDNN's bf16 matmul (gemm.h's gemm_bf16: bf16 operands, float32 products and sums) for bf16
// x and dy, dnnl_sgemm for float32. db (may be null) sums dy per channel: per-sample float32 plane sums in
// double.
//
// Why: oneDNN 2.6.3's backward-weights on strided 3x3 convolutions and on outputs under 8x8 is slow in bf16
// (and falls apart beside another process), where its float32 kernel on the widened operands took 12-28 ms
// per call at resnet18's shapes (batch 64; kernels/cpu_fast/conv2d.cpp's bf16_weights_grad_in_f32). A GEMM
// with K = N P Q (1,024-16,384 terms) runs near the bf16 peak on those shapes; benchmarks/RESULTS.md has the
// per-layer figures, quiet and loaded, that weights_grad_gemm's rule comes from.

#include "core/dtype.h"
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

// Dense convolutions only (one group); any stride, padding and dilation. dw and db overwritten.
// col_budget_bytes: the chunks' bound (the tests make it small to check the sums across chunks).
void conv2d_weights_gemm(const Conv2dShape& g, const float* x, const float* dy, float* dw, float* db,
                         long col_budget_bytes = kColBudgetBytes);
void conv2d_weights_gemm(const Conv2dShape& g, const bfloat16* x, const bfloat16* dy, float* dw, float* db,
                         long col_budget_bytes = kColBudgetBytes);

}  // namespace engine::cpu_fast
