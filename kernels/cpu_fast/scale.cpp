#include "kernels/cpu_fast/scale.h"

#include <cmath>

#include "kernels/cpu_fast/map.h"

namespace engine::cpu_fast {

void scale(const float* x, double a, float* y, std::int64_t n) {
  ENGINE_CHECK(std::isfinite(a), "scale: the factor must be finite, got {}", a);
  map("scale", elementwise::Scale{a}, x, y, n);
}

}  // namespace engine::cpu_fast
