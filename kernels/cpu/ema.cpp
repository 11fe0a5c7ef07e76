#include "kernels/cpu/ema.h"

#include "core/error.h"

namespace engine::cpu {

template <typename T>
void ema_update(double rho, T* ema, T* x, std::int64_t n, bool copy_back) {
  ENGINE_CHECK(rho >= 0.0 && rho <= 1.0, "ema_update: decay {} must be in [0, 1]", rho);
  ENGINE_CHECK(n >= 0, "ema_update: element count must be non-negative, got {}", n);
  ENGINE_CHECK(n == 0 || (ema != nullptr && x != nullptr), "ema_update: null buffer");
  const double w = 1.0 - rho;
  for (std::int64_t i = 0; i < n; ++i) {
    const double e = static_cast<double>(ema[i]);
    const T out = static_cast<T>(e + w * (static_cast<double>(x[i]) - e));
    ema[i] = out;
    if (copy_back) x[i] = out;
  }
}

template void ema_update<float>(double, float*, float*, std::int64_t, bool);
template void ema_update<double>(double, double*, double*, std::int64_t, bool);

}  // namespace engine::cpu
