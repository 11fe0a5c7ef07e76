#pragma once
// Conv2d as an implicit GEMM with shared-memory tiling, the alternative to cuDNN (same semantics as
// kernels/cpu/conv2d.h and conv2d_cudnn.h; any stride and padding; optional bias; dense only: groups and
// dilation are refused, and kernels/ops/conv2d.cpp runs such shapes on cuDNN). Plain fp32 FMA, float
// accumulation. No im2col buffer: the GEMM operands are gathered from x, w, dy while they are loaded into
// shared memory. The three passes are three GEMMs:
//   forward          y [K x (N P Q)]   = W [K x (C R S)]        * im2col(x) [(C R S) x (N P Q)]
//   backward data    dx[C x (N H W)]   = W^T [C x (K R S)]      * gather(dy) [(K R S) x (N H W)]
//                    (gather(dy) holds dy[n, k, (i + pad - r) / stride, ...] where that divides, else 0)
//   backward filter  dW[K x (C R S)]   = dy [K x (N P Q)]       * im2col(x)^T [(N P Q) x (C R S)]
// Backward filter's long reduction (N P Q) is split over the grid (split-K); the partial tiles are summed in
// a fixed order by a second kernel, so every output is deterministic. Bias add and bias grad: bias.h.
// Backward OVERWRITES dx, dw, db; dx and db may be nullptr.

#include "kernels/cpu/conv2d.h"
#include "kernels/cuda_api.h"

namespace engine::cuda {

void conv2d_forward_implicit_gemm(cudaStream_t stream, const Conv2dShape& shape, const float* x,
                                  const float* w, const float* bias, float* y);

void conv2d_backward_implicit_gemm(cudaStream_t stream, const Conv2dShape& shape, const float* x,
                                   const float* w, const float* dy, float* dx, float* dw, float* db);

}  // namespace engine::cuda
