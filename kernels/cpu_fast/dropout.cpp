#include "kernels/cpu_fast/dropout.h"

#include <algorithm>

#include "core/error.h"
#include "core/philox.h"
#include "kernels/cpu_fast/parallel.h"
#include "kernels/elementwise_math.h"

namespace engine::cpu_fast {
namespace {

void apply_mask(const char* what, float p, std::uint64_t seed, std::uint64_t offset, const float* in,
                float* out, std::int64_t n) {
  ENGINE_CHECK(p >= 0.0f && p <= 1.0f, "{}: drop probability p must be in [0, 1], got {}", what, p);
  ENGINE_CHECK(n >= 0, "{}: element count must be non-negative, got {}", what, n);
  if (p >= 1.0f) {  // nothing is kept; 1 / (1 - p) would divide by zero
    std::fill(out, out + n, 0.0f);
    return;
  }
  const elementwise::DropoutMask mask{p, 1.0 / (1.0 - static_cast<double>(p))};  // the CUDA kernel's formula
  const std::int64_t blocks = (n + 3) / 4;  // element i is word i % 4 of block i / 4 (core/philox.h)
#pragma omp parallel for if (n >= kParallelMinElements) schedule(static)
  for (std::int64_t b = 0; b < blocks; ++b) {
    const PhiloxBlock r = philox_block(seed, offset, static_cast<std::uint64_t>(b));
    const std::int64_t first = 4 * b;
    const int count = static_cast<int>(std::min<std::int64_t>(4, n - first));
    for (int j = 0; j < count; ++j) out[first + j] = mask(r.v[j], in[first + j]);
  }
}

}  // namespace

void dropout_forward(float p, std::uint64_t seed, std::uint64_t offset, const float* x, float* y,
                     std::int64_t n) {
  apply_mask("dropout_forward", p, seed, offset, x, y, n);
}

void dropout_backward(float p, std::uint64_t seed, std::uint64_t offset, const float* dy, float* dx,
                      std::int64_t n) {
  apply_mask("dropout_backward", p, seed, offset, dy, dx, n);
}

}  // namespace engine::cpu_fast
