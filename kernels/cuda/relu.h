#pragma once
// ReLU on the GPU; the same rule as kernels/cpu/relu.h: y = x > 0 ? x : 0 (NaN propagates in forward),
// dx = x > 0 ? dy : 0 (0 at the kink and for NaN). Backward OVERWRITES dx. Bitwise equal to the CPU.

#include <cstdint>

#include "kernels/cuda_api.h"

namespace engine::cuda {

// y may alias x.
void relu_forward(cudaStream_t stream, const float* x, float* y, std::int64_t n);
// Takes the forward input x. dx may alias dy.
void relu_backward(cudaStream_t stream, const float* x, const float* dy, float* dx, std::int64_t n);

}  // namespace engine::cuda
