#pragma once
// Global average pooling on the GPU, as kernels/cpu/avgpool.h: y[n, c] = mean of the x[n, c] plane;
// dx[n, c, i, j] = dy[n, c] / (h*w), OVERWRITTEN. One warp per plane (a plane is small: 8x8 in a CIFAR
// ResNet), summed in double and rounded once, so the result is within one float ulp of the reference.

#include "core/dtype.h"
#include "kernels/cuda_api.h"

namespace engine::cuda {

void global_avgpool_forward(cudaStream_t stream, int n, int c, int h, int w, const float* x, float* y);
void global_avgpool_backward(cudaStream_t stream, int n, int c, int h, int w, const float* dy, float* dx);
// The same over bf16 storage (bf16 autocast): float/double arithmetic, each output rounded once to bf16.
void global_avgpool_forward(cudaStream_t stream, int n, int c, int h, int w, const bfloat16* x, bfloat16* y);
void global_avgpool_backward(cudaStream_t stream, int n, int c, int h, int w, const bfloat16* dy,
                             bfloat16* dx);

// x / dx NHWC (channels last); y / dy [N, C] as above. One thread per (n, c), the cells summed in order in
// double.
void global_avgpool_forward_nhwc(cudaStream_t stream, int n, int c, int h, int w, const float* x, float* y);
void global_avgpool_backward_nhwc(cudaStream_t stream, int n, int c, int h, int w, const float* dy,
                                  float* dx);

}  // namespace engine::cuda
