#pragma once
// Conv2d through cuDNN, the semantics of kernels/cpu/conv2d.h (Conv2dShape): cross-correlation, zero
// padding, any stride, NCHW fp32, weight [K, C, R, S], optional bias.
//
// The first call for a shape builds a plan in the handles (tensor/filter/convolution descriptors, the math
// type, and one algorithm per direction chosen per CudaHandlesOptions: heuristic or benchmark, deterministic
// backward algorithms by default); later calls with that shape reuse it. Workspaces come from the caching
// allocator on `stream`, so a steady state makes no cudaMalloc.
//
// Bias: the add after cudnnConvolutionForward and the bias gradient are hand-written kernels (bias.h).
// Backward OVERWRITES dx, dw, db; dx may be nullptr (first layer), db may be nullptr (no bias); dw is
// required.

#include "kernels/cpu/conv2d.h"
#include "kernels/cuda_api.h"

namespace engine::cuda {

void conv2d_forward_cudnn(CudaHandles& handles, cudaStream_t stream, const Conv2dShape& shape, const float* x,
                          const float* w, const float* bias, float* y);

void conv2d_backward_cudnn(CudaHandles& handles, cudaStream_t stream, const Conv2dShape& shape,
                           const float* x, const float* w, const float* dy, float* dx, float* dw, float* db);

}  // namespace engine::cuda
