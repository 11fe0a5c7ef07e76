#pragma once
// Linear (y = x W^T + b) through cuBLAS, the semantics of kernels/cpu/linear.h (LinearShape):
//   x [N, in], w [out, in] (PyTorch's layout), b [out], y [N, out], all row-major.
//   forward:  y  = x W^T + b
//   backward: dx = dy W,  dW = dy^T x,  db = column sums of dy  (all OVERWRITTEN; dx, db may be nullptr)
// The GEMMs accumulate in fp32 (CUBLAS_COMPUTE_32F) unless the handles allow TF32. The bias kernels are
// hand-written (bias.h): db is a deterministic double-accumulated reduction.

#include "kernels/cpu/linear.h"
#include "kernels/cuda_api.h"

namespace engine::cuda {

void linear_forward(CudaHandles& handles, cudaStream_t stream, const LinearShape& shape, const float* x,
                    const float* w, const float* bias, float* y);

void linear_backward(CudaHandles& handles, cudaStream_t stream, const LinearShape& shape, const float* x,
                     const float* w, const float* dy, float* dx, float* dw, float* db);

}  // namespace engine::cuda
