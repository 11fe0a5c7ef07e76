#pragma once
// Conv2d through cuDNN, the semantics of kernels/cpu/conv2d.h (Conv2dShape): cross-correlation, zero
// padding, any stride, NCHW fp32, weight [K, C, R, S], optional bias.
//
// The first call for a shape builds a plan in the handles (tensor/filter/convolution descriptors, the math
// type, and one algorithm per direction chosen per CudaHandlesOptions: heuristic or benchmark, deterministic
// backward algorithms by default); later calls with that shape reuse it. Workspaces come from the caching
// allocator on `stream`, so a steady state makes no cudaMalloc.
//
// Layout NHWC (core/layout.h): x, y, dx and dy are channels last, described to cuDNN as CUDNN_TENSOR_NHWC.
// The weight stays [K, C, R, S] in the caller's memory (the flat parameter buffer, checkpoints); cuDNN's
// NHWC kernels (the tensor-core ones in particular) expect an NHWC filter too, so each call transposes the
// weight into a [K, R, S, C] scratch copy and the filter gradient back out of one (kernels/cuda/transpose.h;
// K*C*R*S elements, small next to the activations). This is what PyTorch's channels_last does: its weights
// are converted to channels_last as well.
//
// Bias: the add after cudnnConvolutionForward and the bias gradient are hand-written kernels (bias.h).
// Backward OVERWRITES dx, dw, db; dx may be nullptr (first layer), db may be nullptr (no bias); dw is
// required.

#include "core/layout.h"
#include "kernels/cpu/conv2d.h"
#include "kernels/cuda_api.h"

namespace engine::cuda {

void conv2d_forward_cudnn(CudaHandles& handles, cudaStream_t stream, const Conv2dShape& shape, const float* x,
                          const float* w, const float* bias, float* y, Layout layout = Layout::NCHW);

void conv2d_backward_cudnn(CudaHandles& handles, cudaStream_t stream, const Conv2dShape& shape,
                           const float* x, const float* w, const float* dy, float* dx, float* dw, float* db,
                           Layout layout = Layout::NCHW);

}  // namespace engine::cuda
