#pragma once
// The pointwise activations of kernels/activation_kind.h in float32 on the host, fast: the functors of
// kernels/elementwise_math.h (the formulas the CUDA kernels apply) through the one elementwise loop
// (kernels/cpu_fast/map.h). Same contract as kernels/cpu/activation.h (the oracle); not bitwise equal to it:
// tests/cpu/activation_test.cpp bounds the difference (tests/common/activation_tolerance.h).

#include <cstdint>

#include "kernels/activation_kind.h"

namespace engine::cpu_fast {

// y may alias x.
void activation_forward(const ActivationParams& p, const float* x, float* y, std::int64_t n);
// Takes what the forward kept (its output y for Sigmoid and Tanh, else its input x:
// kernels/activation_kind.h); OVERWRITES dx, which may alias dy.
void activation_backward(const ActivationParams& p, const float* saved, const float* dy, float* dx,
                         std::int64_t n);

}  // namespace engine::cpu_fast
