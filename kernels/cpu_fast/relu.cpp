#include "kernels/cpu_fast/relu.h"

#include "core/error.h"
#include "kernels/cpu_fast/parallel.h"

namespace engine::cpu_fast {

void relu_forward(const float* x, float* y, std::int64_t n) {
  ENGINE_CHECK(n >= 0, "relu_forward: element count must be non-negative, got {}", n);
#pragma omp parallel for simd if (n >= kParallelMinElements) schedule(static)
  for (std::int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    y[i] = (v > 0.0f || v != v) ? v : 0.0f;  // v != v: NaN propagates, as in the reference
  }
}

void relu_backward(const float* x, const float* dy, float* dx, std::int64_t n) {
  ENGINE_CHECK(n >= 0, "relu_backward: element count must be non-negative, got {}", n);
#pragma omp parallel for simd if (n >= kParallelMinElements) schedule(static)
  for (std::int64_t i = 0; i < n; ++i) dx[i] = x[i] > 0.0f ? dy[i] : 0.0f;
}

}  // namespace engine::cpu_fast
