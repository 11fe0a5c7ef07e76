#pragma once
// y = a + b in float32 on the host, fast: vectorised and OpenMP-threaded. cpu::residual_add_forward (the
// oracle) adds in double and rounds once; for two floats that is the float sum itself (double has more than
// twice float's precision, so the double rounding is innocuous), so the two agree bit for bit.

#include <cstdint>

#include "core/dtype.h"

namespace engine::cpu_fast {

void residual_add_forward(const float* a, const float* b, float* y, std::int64_t n);
// The same on bf16 storage (bf16_io.h): the float sum of the widened values, rounded once to bf16.
void residual_add_forward(const bfloat16* a, const bfloat16* b, bfloat16* y, std::int64_t n);

}  // namespace engine::cpu_fast
