#include "kernels/cpu_fast/ema.h"

#include "core/error.h"
#include "kernels/cpu_fast/parallel.h"

namespace engine::cpu_fast {

void ema_update(double rho, float* ema, float* x, std::int64_t n, bool copy_back) {
  ENGINE_CHECK(rho >= 0.0 && rho <= 1.0, "ema_update: decay {} must be in [0, 1]", rho);
  ENGINE_CHECK(n >= 0, "ema_update: element count must be non-negative, got {}", n);
  ENGINE_CHECK(n == 0 || (ema != nullptr && x != nullptr), "ema_update: null buffer");
  const double w = 1.0 - rho;
  if (copy_back) {
#pragma omp parallel for simd if (n >= kParallelMinElements) schedule(static)
    for (std::int64_t i = 0; i < n; ++i) {
      const double e = static_cast<double>(ema[i]);
      const float out = static_cast<float>(e + w * (static_cast<double>(x[i]) - e));
      ema[i] = out;
      x[i] = out;
    }
  } else {
#pragma omp parallel for simd if (n >= kParallelMinElements) schedule(static)
    for (std::int64_t i = 0; i < n; ++i) {
      const double e = static_cast<double>(ema[i]);
      ema[i] = static_cast<float>(e + w * (static_cast<double>(x[i]) - e));
    }
  }
}

}  // namespace engine::cpu_fast
