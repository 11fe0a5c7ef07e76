#include "kernels/cpu/scale.h"

#include <cmath>

#include "core/error.h"

namespace engine::cpu {

template <typename T>
void scale(const T* x, double a, T* y, std::int64_t n) {
  ENGINE_CHECK(n >= 0, "scale: element count must be non-negative, got {}", n);
  ENGINE_CHECK(std::isfinite(a), "scale: the factor must be finite, got {}", a);
  for (std::int64_t i = 0; i < n; ++i) y[i] = static_cast<T>(a * static_cast<double>(x[i]));
}

template void scale<float>(const float*, double, float*, std::int64_t);
template void scale<double>(const double*, double, double*, std::int64_t);

}  // namespace engine::cpu
