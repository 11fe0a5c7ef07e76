#pragma once
// The EMA / lookahead update (kernels/cpu/ema.h) as one launch over a flat float32 buffer, the reference's
// double operations with explicit round-to-nearest intrinsics (no FMA contraction): bitwise equal to
// cpu::ema_update<float>.

#include <cstdint>

#include "kernels/cuda_api.h"

namespace engine::cuda {

void ema_update(cudaStream_t stream, double rho, float* ema, float* x, std::int64_t n, bool copy_back);

}  // namespace engine::cuda
