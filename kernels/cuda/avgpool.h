#pragma once
// Global average pooling on the GPU, as kernels/cpu/avgpool.h: y[n, c] = mean of the x[n, c] plane;
// dx[n, c, i, j] = dy[n, c] / (h*w), OVERWRITTEN. One warp per plane (a plane is small: 8x8 in a CIFAR
// ResNet), summed in double and rounded once, so the result is within one float ulp of the reference.

#include "core/dtype.h"
#include "core/layout.h"
#include "kernels/cuda_api.h"

namespace engine::cuda {

// x / dx in `layout` (NHWC: channels last; then one thread per (n, c) sums the cells in order in double);
// y / dy are [N, C].
void global_avgpool_forward(cudaStream_t stream, int n, int c, int h, int w, const float* x, float* y,
                            Layout layout = Layout::NCHW);
void global_avgpool_backward(cudaStream_t stream, int n, int c, int h, int w, const float* dy, float* dx,
                             Layout layout = Layout::NCHW);
// The same over bf16 storage (bf16 autocast): float/double arithmetic, each output rounded once to bf16.
void global_avgpool_forward(cudaStream_t stream, int n, int c, int h, int w, const bfloat16* x, bfloat16* y,
                            Layout layout = Layout::NCHW);
void global_avgpool_backward(cudaStream_t stream, int n, int c, int h, int w, const bfloat16* dy,
                             bfloat16* dx, Layout layout = Layout::NCHW);

}  // namespace engine::cuda
