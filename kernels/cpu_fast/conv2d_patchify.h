#pragma once
// Patch convolutions (kernel = stride, no padding, no dilation, one group: convnext's stem, 4x4 stride 4, and
// its downsampling layers, 2x2 stride 2) in float32 on the host as GEMMs over the output's pixels. Each
// output pixel reads its own R x S patch of every channel and no input is read twice, so the im2col matrix
// X_cols [N*P*Q, C*R*S] is a permutation of x (space-to-depth): Y = X_cols W^T + b, dX_cols = dY W,
// dW = dY^T X_cols (W [K, C*R*S], the engine's [K, C, R, S] as it is). x and y (dx, dy) each NCHW or blocked
// (nChw16c, nChw8c): the permutation reads and writes either, so nothing is reordered. oneDNN 2.6.3's direct
// kernels ran convnext_tiny's 2x2 stride-2 directions at 8-24 GFLOP/s on one thread (ONEDNN_VERBOSE; its
// three downsampling layers and stem took 45 ms of a one-thread step, 26 ms here: docs/ZOO.md).
//
// Same contract as conv2d.h's conv2d_forward / conv2d_backward (gradients overwritten, dx and db may be
// null; input rows and columns a patch does not reach, when H or W is not a multiple of the stride, get a
// zero dx); conv2d.h routes the shapes patchify_gemm accepts here. The sums are float32 in the GEMM's order:
// C*R*S products per output, N*P*Q per weight gradient, K per input gradient; db sums dy in double.

#include "kernels/cpu/conv2d.h"
#include "kernels/cpu_fast/conv2d.h"

namespace engine::cpu_fast {

// Whether the shape is a patch convolution: kernel = stride (larger than 1x1), no padding, no dilation, one
// group.
bool patchify(const Conv2dShape& shape);
// Whether conv2d.h's float32 convolutions run the shape here: a patch convolution, its activations NCHW or
// blocked (conv2d_impl then says "engine:patchify_gemm").
bool patchify_gemm(const Conv2dShape& shape, ConvLayouts layouts);

void conv2d_patchify_forward(const Conv2dShape& shape, const float* x, const float* w, const float* bias,
                             float* y, ConvLayouts layouts = {});
void conv2d_patchify_backward(const Conv2dShape& shape, const float* x, const float* w, const float* dy,
                              float* dx, float* dw, float* db, ConvLayouts layouts = {});

}  // namespace engine::cpu_fast
