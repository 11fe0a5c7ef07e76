#pragma once
// GELU (exact erf form) in float32 on the host, fast: kernels/elementwise_math.h's Gelu (normal_tail_float,
// the formula the CUDA kernel applies) in one OpenMP-threaded pass, against the reference's double
// (kernels/cpu/gelu.h, the oracle, same formulas and NaN/inf rules). Not bitwise equal to it:
// tests/cpu/cpu_fast_elementwise_test.cpp bounds the difference.

#include <cstdint>

namespace engine::cpu_fast {

void gelu_forward(const float* x, float* y, std::int64_t n);
void gelu_backward(const float* x, const float* dy, float* dx, std::int64_t n);

}  // namespace engine::cpu_fast
