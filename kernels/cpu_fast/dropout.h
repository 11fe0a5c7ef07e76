#pragma once
// Dropout in float32 on the host, fast: the same Philox mask as cpu::dropout_forward / dropout_backward
// (kernels/cpu/dropout.h, the oracle, and the CUDA kernel), one Philox block per 4 elements instead of one
// per element, OpenMP-threaded. out = keep ? in * (1 / (1 - p)) : 0 with the product rounded from double as
// in the reference, so the result equals it bit for bit.

#include <cstdint>

namespace engine::cpu_fast {

void dropout_forward(float p, std::uint64_t seed, std::uint64_t offset, const float* x, float* y,
                     std::int64_t n);
void dropout_backward(float p, std::uint64_t seed, std::uint64_t offset, const float* dy, float* dx,
                      std::int64_t n);

}  // namespace engine::cpu_fast
