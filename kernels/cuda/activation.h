#pragma once
// The pointwise activations of kernels/activation_kind.h on the GPU: kernels/elementwise_math.h's functors
// (the formulas kernels/cpu_fast/activation applies) through launch_map, float32 and bf16 storage (float
// arithmetic, each output rounded once). Against the double reference (kernels/cpu/activation.h):
// tests/gpu/cuda_activation_test.cpp. Backward takes what the forward kept (its output y for Sigmoid and
// Tanh, else its input x: kernels/activation_kind.h) and OVERWRITES dx.

#include <cstdint>

#include "core/dtype.h"
#include "kernels/activation_kind.h"
#include "kernels/cuda_api.h"

namespace engine::cuda {

// y may alias x; dx may alias dy.
void activation_forward(cudaStream_t stream, const ActivationParams& p, const float* x, float* y,
                        std::int64_t n);
void activation_backward(cudaStream_t stream, const ActivationParams& p, const float* saved, const float* dy,
                         float* dx, std::int64_t n);
void activation_forward(cudaStream_t stream, const ActivationParams& p, const bfloat16* x, bfloat16* y,
                        std::int64_t n);
void activation_backward(cudaStream_t stream, const ActivationParams& p, const bfloat16* saved,
                         const bfloat16* dy, bfloat16* dx, std::int64_t n);

}  // namespace engine::cuda
