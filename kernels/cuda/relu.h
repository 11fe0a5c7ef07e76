#pragma once
// ReLU on the GPU; the same rule as kernels/cpu/relu.h: y = x > 0 ? x : 0 (NaN propagates in forward),
// dx = x > 0 ? dy : 0 (0 at the kink and for NaN). Backward OVERWRITES dx. Bitwise equal to the CPU.

#include <cstdint>

#include "core/dtype.h"
#include "kernels/cuda_api.h"

namespace engine::cuda {

// y may alias x.
void relu_forward(cudaStream_t stream, const float* x, float* y, std::int64_t n);
// Takes the forward input x. dx may alias dy.
void relu_backward(cudaStream_t stream, const float* x, const float* dy, float* dx, std::int64_t n);
// The same over bf16 storage (bf16 autocast): float arithmetic, each output rounded once (nearest even).
void relu_forward(cudaStream_t stream, const bfloat16* x, bfloat16* y, std::int64_t n);
void relu_backward(cudaStream_t stream, const bfloat16* x, const bfloat16* dy, bfloat16* dx, std::int64_t n);

}  // namespace engine::cuda
