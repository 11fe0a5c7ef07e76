#pragma once
// Softmax along the last axis of [rows, k] in float32 on the host, fast: kernels/softmax_math.h's formulas
// (the ones the CUDA row kernel applies), rows spread over OpenMP threads, each row's max, exponentials and
// sums in vector lanes (16 running maxima; the sums' lanes folded at the end). Against the double reference
// (kernels/cpu/softmax.h, the oracle, same NaN rules): not bitwise equal, tests/cpu/softmax_test.cpp bounds
// the difference. Backward OVERWRITES dx; y may alias x, dx dy.

#include <cstdint>

namespace engine::cpu_fast {

void softmax_forward(const float* x, float* y, std::int64_t rows, std::int64_t k);
// From the forward output y.
void softmax_backward(const float* y, const float* dy, float* dx, std::int64_t rows, std::int64_t k);

}  // namespace engine::cpu_fast
