#include "kernels/cpu_fast/gelu.h"

#include <cmath>

#include "core/error.h"
#include "kernels/cpu_fast/parallel.h"

namespace engine::cpu_fast {

namespace {
constexpr float kInvSqrt2 = 0.70710678118654752440f;
constexpr float kInvSqrt2Pi = 0.39894228040143267794f;
}  // namespace

void gelu_forward(const float* x, float* y, std::int64_t n) {
  ENGINE_CHECK(n >= 0, "gelu_forward: element count must be non-negative, got {}", n);
#pragma omp parallel for if (n >= kParallelMinElements) schedule(static)
  for (std::int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    y[i] = 0.5f * v * std::erfc(-v * kInvSqrt2);
  }
}

void gelu_backward(const float* x, const float* dy, float* dx, std::int64_t n) {
  ENGINE_CHECK(n >= 0, "gelu_backward: element count must be non-negative, got {}", n);
#pragma omp parallel for if (n >= kParallelMinElements) schedule(static)
  for (std::int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    const float grad = 0.5f * std::erfc(-v * kInvSqrt2) + v * kInvSqrt2Pi * std::exp(-0.5f * v * v);
    dx[i] = dy[i] * grad;
  }
}

}  // namespace engine::cpu_fast
