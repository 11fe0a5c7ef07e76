#include "kernels/cpu_fast/residual_add.h"

#include "core/error.h"
#include "kernels/cpu_fast/parallel.h"

namespace engine::cpu_fast {

void residual_add_forward(const float* a, const float* b, float* y, std::int64_t n) {
  ENGINE_CHECK(n >= 0, "residual_add_forward: element count must be non-negative, got {}", n);
#pragma omp parallel for simd if (n >= kParallelMinElements) schedule(static)
  for (std::int64_t i = 0; i < n; ++i) y[i] = a[i] + b[i];
}

}  // namespace engine::cpu_fast
