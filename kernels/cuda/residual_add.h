#pragma once
// Residual add on the GPU, as kernels/cpu/residual_add.h: y = a + b, formed in double and rounded once
// (bitwise equal to the CPU). Backward: da = dy, db = dy (OVERWRITTEN).
//
// Flatten needs no kernel at all: [n, c, h, w] -> [n, c*h*w] is Tensor::view on contiguous data, in both
// directions.

#include <cstdint>

#include "core/dtype.h"
#include "kernels/cuda_api.h"

namespace engine::cuda {

// y may alias a or b.
void residual_add_forward(cudaStream_t stream, const float* a, const float* b, float* y, std::int64_t n);
// The same over bf16 storage (bf16 autocast): the float32 kernel's sum, rounded to bf16 at the store (the
// CPU's bf16 path, widen / float kernel / round, gives the same bits).
void residual_add_forward(cudaStream_t stream, const bfloat16* a, const bfloat16* b, bfloat16* y,
                          std::int64_t n);
// da and db must differ; either may equal dy (then that copy is skipped). One pass: dy is read once.
void residual_add_backward(cudaStream_t stream, const float* dy, float* da, float* db, std::int64_t n);

}  // namespace engine::cuda
