#pragma once
// Softmax along the last axis of [rows, k] on the GPU: one warp per row, kernels/softmax_math.h's formulas
// (those the fast CPU path applies), the row max and sums by the warp's fixed butterfly (deterministic).
// Backward OVERWRITES dx, from the forward output y. y may alias x, dx dy. Not bitwise equal to the double
// reference (kernels/cpu/softmax.h): tests/gpu/cuda_softmax_test.cpp bounds the difference.

#include <cstdint>

#include "kernels/cuda_api.h"

namespace engine::cuda {

void softmax_forward(cudaStream_t stream, const float* x, float* y, std::int64_t rows, std::int64_t k);
void softmax_backward(cudaStream_t stream, const float* y, const float* dy, float* dx, std::int64_t rows,
                      std::int64_t k);

}  // namespace engine::cuda
