#pragma once
// GELU (exact erf form) on the GPU; the rule of kernels/cpu/gelu.h computed in float
// (kernels/elementwise_math.h's Gelu): y = x/2 * erfc(-x/sqrt(2)), dx = dy * (Phi(x) + x * phi(x)). Backward
// OVERWRITES dx. Not bitwise equal to the double reference: tests/gpu/cuda_gelu_test.cpp bounds the
// difference.

#include <cstdint>

#include "core/dtype.h"
#include "kernels/cuda_api.h"

namespace engine::cuda {

// y may alias x.
void gelu_forward(cudaStream_t stream, const float* x, float* y, std::int64_t n);
// Takes the forward input x. dx may alias dy.
void gelu_backward(cudaStream_t stream, const float* x, const float* dy, float* dx, std::int64_t n);
// The same over bf16 storage (bf16 autocast): float arithmetic, each output rounded once (nearest even).
void gelu_forward(cudaStream_t stream, const bfloat16* x, bfloat16* y, std::int64_t n);
void gelu_backward(cudaStream_t stream, const bfloat16* x, const bfloat16* dy, bfloat16* dx, std::int64_t n);

}  // namespace engine::cuda
