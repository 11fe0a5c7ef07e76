#pragma once
// Pointwise convolutions (1x1, stride 1, no padding, one group: convnext's ChannelLinear, regnet's and the
// bottlenecks' 1x1 layers) in float32 on the host as GEMMs over the batch's pixels, instead of oneDNN's
// jit_1x1 convolution. A pointwise convolution is a Linear applied to every pixel: with the pixels as rows,
// X [N*H*W, C], it is Y = X W^T + b, dX = dY W, dW = dY^T X (W [K, C]). At the zoo's small maps (1x1 to 8x8
// at 32x32 inputs) oneDNN 2.6.3's jit_1x1 ran these at 50-210 GFLOP/s (its backward-weights 1.5-3x its
// forward), where one GEMM over all N*H*W rows runs near the host's peak (benchmarks/RESULTS.md has the
// figures). NCHW tensors become pixel rows and back through oneDNN's reorder (nothing to do at 1x1 maps), and
// so do blocked ones (nChw16c, nChw8c) on maps of at most 4 pixels: in the blocked layout oneDNN's jit_1x1
// took 1.15-1.3x the GEMMs' time at convnext's 2x2 stage on one thread (conv2d_weights_bench --pointwise
// --layout nchw16c; docs/ZOO.md); on larger blocked maps the two reorders cost more than the GEMM saves
// (quiet, two threads: squeezenet's steps 10-15% slower through the GEMMs, benchmarks/RESULTS.md).
//
// Same contract as conv2d.h's conv2d_forward / conv2d_backward (gradients overwritten, dx and db may be
// null); conv2d.h routes the shapes pointwise_gemm accepts here. The sums are float32 in the GEMM's order:
// C products per output, N*H*W per weight gradient; db sums dy in double.

#include "kernels/cpu/conv2d.h"
#include "kernels/cpu_fast/conv2d.h"

namespace engine::cpu_fast {

// Whether the shape is pointwise: 1x1 kernel, stride 1, no padding, no dilation, one group (what the two
// functions below take, at any map size).
bool pointwise(const Conv2dShape& shape);
// Whether conv2d.h's float32 convolutions run the shape here: pointwise, on maps of at most 4 pixels (where
// the GEMM was measured faster than oneDNN's jit_1x1; conv2d_impl then says "engine:pointwise_gemm").
// Small layers (at most 2^24 multiply-adds) at any map size too, in NCHW. Blocked activations (both x and y
// in the same blocked layout) take the GEMMs on maps of at most 4 pixels only.
bool pointwise_gemm(const Conv2dShape& shape, ConvLayouts layouts = {});

// For the benchmarks: the rule, or every pointwise shape through the GEMM, or none.
enum class PointwiseRoute { Rule, Always, Never };
void set_pointwise_route(PointwiseRoute r);

// x (and dx) and y (and dy) both NCHW or both in the same blocked layout (nChw16c, nChw8c: relaid into
// pixel rows and back as NCHW is).
void conv2d_pointwise_forward(const Conv2dShape& shape, const float* x, const float* w, const float* bias,
                              float* y, ConvLayouts layouts = {});
void conv2d_pointwise_backward(const Conv2dShape& shape, const float* x, const float* w, const float* dy,
                               float* dx, float* dw, float* db, ConvLayouts layouts = {});

}  // namespace engine::cpu_fast
