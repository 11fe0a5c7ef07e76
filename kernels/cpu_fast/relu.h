#pragma once
// ReLU in float32 on the host, fast: one vectorised, OpenMP-threaded pass. Same contract as cpu::relu_forward
// / cpu::relu_backward (kernels/cpu/relu.h, the oracle): NaN propagates forward; dx = dy where x > 0, else 0.
// Elementwise with no arithmetic, so it equals the reference bit for bit.

#include <cstdint>

#include "core/dtype.h"

namespace engine::cpu_fast {

void relu_forward(const float* x, float* y, std::int64_t n);
void relu_backward(const float* x, const float* dy, float* dx, std::int64_t n);
// The same on bf16 storage (bf16_io.h): exact too (ReLU passes or zeroes a value, nothing to round).
void relu_forward(const bfloat16* x, bfloat16* y, std::int64_t n);
void relu_backward(const bfloat16* x, const bfloat16* dy, bfloat16* dx, std::int64_t n);

}  // namespace engine::cpu_fast
