#pragma once
// y = a x in float32 on the host, fast: kernels/elementwise_math.h's Scale (the double product rounded once,
// the formula the CUDA kernel applies) in one vectorised, OpenMP-threaded pass; bitwise cpu::scale (the
// oracle). y may alias x.

#include <cstdint>

namespace engine::cpu_fast {

void scale(const float* x, double a, float* y, std::int64_t n);

}  // namespace engine::cpu_fast
