#pragma once
// Residual add on the GPU, as kernels/cpu/residual_add.h: y = a + b, formed in double and rounded once
// (bitwise equal to the CPU). Backward: da = dy, db = dy (OVERWRITTEN).
//
// Flatten needs no kernel at all: [n, c, h, w] -> [n, c*h*w] is Tensor::view on contiguous data, in both
// directions.

#include <cstdint>

#include "kernels/cuda_api.h"

namespace engine::cuda {

// y may alias a or b.
void residual_add_forward(cudaStream_t stream, const float* a, const float* b, float* y, std::int64_t n);
// da and db must differ; either may equal dy (then that copy is skipped). One pass: dy is read once.
void residual_add_backward(cudaStream_t stream, const float* dy, float* da, float* db, std::int64_t n);

}  // namespace engine::cuda
