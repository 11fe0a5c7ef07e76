#pragma once
// ReLU in float32 on the host, fast: one vectorised, OpenMP-threaded pass. Same contract as cpu::relu_forward
// / cpu::relu_backward (kernels/cpu/relu.h, the oracle): NaN propagates forward; dx = dy where x > 0, else 0.
// Elementwise with no arithmetic, so it equals the reference bit for bit.

#include <cstdint>

namespace engine::cpu_fast {

void relu_forward(const float* x, float* y, std::int64_t n);
void relu_backward(const float* x, const float* dy, float* dx, std::int64_t n);

}  // namespace engine::cpu_fast
