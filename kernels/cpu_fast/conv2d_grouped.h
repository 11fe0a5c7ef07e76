#pragma once
// Grouped and depthwise 2-D convolution in float32, direct loops on the engine's NCHW/KCRS tensors: the
// shapes where oneDNN 2.6.3 has no jit kernel for a direction and falls back to its gemm one (x64:gemm:jit,
// im2col per group). That fallback is what a zoo model at 32x32 hits on its small maps: a depthwise 7x7 or
// 5x5 whose padding is as large as the map (convnext_tiny's 2x2 and 1x1 stages, efficientnet_b0's 5x5 on 2x2
// and 1x1), and most grouped backward-weights (convnext_tiny, efficientnet_b0, regnet_y_400mf): 18-38 ms a
// call on one of convnext_tiny's depthwise convolutions (batch 64, 2 threads) where these loops take about 1
// ms, half of its training step. kernels/cpu_fast/conv2d.cpp calls them for exactly those directions
// (conv2d_impl then says "engine:grouped_direct").
//
// Same geometry and contract as cpu::conv2d_forward / backward (groups, stride, padding, dilation; outputs
// overwritten). Each forward and backward-data output is one float32 sum in a fixed order (the taps of each
// channel of the group in turn); dw sums its products in float32 vector lanes over up to 16 samples at a
// time, then in double, as db sums per-sample float32 plane sums; so results repeat bit for bit at any thread
// count. Planes under 16 outputs with several channels a group (regnet_y_400mf's 2x2 and 1x1 stages) take
// dw in a column form instead: per sample the group's input as columns [pixel, channel x tap], each output
// channel's weights one vector run per pixel, each weight a float32 sum in order over up to 16 samples, then
// double (8x faster there at one thread: the plane form spent its time on per-slice copies for 4 products).
// Threads split output planes (forward), input planes (backward-data) and weight slices or groups
// (backward-weights), so no two threads write one value.

#include "kernels/shapes.h"

namespace engine::cpu_fast {

void grouped_conv2d_forward(const Conv2dShape& g, const float* x, const float* w, const float* bias,
                            float* y);
void grouped_conv2d_backward_data(const Conv2dShape& g, const float* w, const float* dy, float* dx);
// db may be null.
void grouped_conv2d_backward_weights(const Conv2dShape& g, const float* x, const float* dy, float* dw,
                                     float* db);

}  // namespace engine::cpu_fast
