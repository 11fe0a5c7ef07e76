#pragma once
// Linear (y = x W^T + b) through cuBLAS, the semantics of kernels/cpu/linear.h (LinearShape):
//   x [N, in], w [out, in] (PyTorch's layout), b [out], y [N, out], all row-major.
//   forward:  y  = x W^T + b
//   backward: dx = dy W,  dW = dy^T x,  db = column sums of dy  (all OVERWRITTEN; dx, db may be nullptr)
// The GEMMs accumulate in fp32 (CUBLAS_COMPUTE_32F) unless the handles allow TF32. The bias kernels are
// hand-written (bias.h): db is a deterministic double-accumulated reduction.

#include "core/dtype.h"
#include "kernels/cpu/linear.h"
#include "kernels/cuda_api.h"

namespace engine::cuda {

void linear_forward(CudaHandles& handles, cudaStream_t stream, const LinearShape& shape, const float* x,
                    const float* w, const float* bias, float* y);

void linear_backward(CudaHandles& handles, cudaStream_t stream, const LinearShape& shape, const float* x,
                     const float* w, const float* dy, float* dx, float* dw, float* db);

// bf16 autocast on tensor cores (kernels/ops/autocast_bf16.h): x, w (the model's bf16 mirror), y, dy and dx
// bf16; cublasGemmEx with CUDA_R_16BF operands and CUBLAS_COMPUTE_32F. The fp32 bias is rounded to bf16
// and added to the bf16 y (rounded again, as on CUDA in PyTorch). dw and db are fp32 outputs holding the
// bf16 values autocast's bf16 gradients have (the fp32 GEMM result / double sum, rounded to bf16).
void linear_forward_bf16(CudaHandles& handles, cudaStream_t stream, const LinearShape& shape,
                         const bfloat16* x, const bfloat16* w, const float* bias, bfloat16* y);

void linear_backward_bf16(CudaHandles& handles, cudaStream_t stream, const LinearShape& shape,
                          const bfloat16* x, const bfloat16* w, const bfloat16* dy, bfloat16* dx, float* dw,
                          float* db);

}  // namespace engine::cuda
