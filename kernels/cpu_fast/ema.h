#pragma once
// The EMA / lookahead update of kernels/cpu/ema.h over a flat float32 buffer, threaded with OpenMP. It does
// the reference's double operations in the same order (vectorised doubles are exact IEEE operations), so it
// is bitwise equal to cpu::ema_update<float>.

#include <cstdint>

namespace engine::cpu_fast {

void ema_update(double rho, float* ema, float* x, std::int64_t n, bool copy_back);

}  // namespace engine::cpu_fast
