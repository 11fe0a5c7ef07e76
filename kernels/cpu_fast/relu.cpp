#include "kernels/cpu_fast/relu.h"

#include <bit>
#include <cstdint>

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
  // dy where x > 0, else +0, as a bitwise and: GCC keeps the select as control flow and does not vectorise
  // it (the same bits as the reference's select; NaN > 0 is false, so NaN gets +0 too).
#pragma omp parallel for simd if (n >= kParallelMinElements) schedule(static)
  for (std::int64_t i = 0; i < n; ++i) {
    const std::uint32_t keep = 0u - static_cast<std::uint32_t>(x[i] > 0.0f);
    dx[i] = std::bit_cast<float>(std::bit_cast<std::uint32_t>(dy[i]) & keep);
  }
}

}  // namespace engine::cpu_fast
