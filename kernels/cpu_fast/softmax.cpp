#include "kernels/cpu_fast/softmax.h"

#include <cmath>

#include "kernels/cpu/softmax.h"
#include "kernels/cpu_fast/map.h"  // ENGINE_CPU_CLONES
#include "kernels/cpu_fast/parallel.h"
#include "kernels/softmax_math.h"

namespace engine::cpu_fast {
namespace {

constexpr int kLanes = 16;  // one AVX-512 vector of floats

// The row's max, NaN skipped (as std::fmax: a comparison with NaN is false, so a lane keeps its value; a row
// of NaN gives -inf, and its e_j are NaN all the same), in kLanes running maxima: each step one vector
// compare-and-select (GCC emits max instructions for this form), no dependence between lanes. Exact in any
// order. Always inlined: a call would run the baseline (SSE2) code from the vector clones.
[[gnu::always_inline]] inline float row_max(const float* xr, std::int64_t k) {
  float lane[kLanes];
  for (float& v : lane) v = -INFINITY;
  std::int64_t j = 0;
  for (; j + kLanes <= k; j += kLanes) {
#pragma omp simd
    for (int l = 0; l < kLanes; ++l) lane[l] = xr[j + l] > lane[l] ? xr[j + l] : lane[l];
  }
  float m = -INFINITY;
  for (; j < k; ++j) m = xr[j] > m ? xr[j] : m;
  for (const float v : lane) m = v > m ? v : m;
  return m;
}

}  // namespace

// Each row: the max; e_j parked in y and summed in one vectorised pass (the `simd` reduction keeps one
// partial sum per lane, folded at the end: an order tests/common/softmax_tolerance.h's any-order bound
// covers); then y_j = e_j (1 / s), vectorised.
ENGINE_CPU_CLONES void softmax_forward(const float* x, float* y, std::int64_t rows, std::int64_t k) {
  cpu::check_softmax_sizes("softmax_forward", rows, k);
  const elementwise::Softmax f;
#pragma omp parallel for if (rows * k >= kParallelMinElements) schedule(static)
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * k;
    float* yr = y + r * k;
    const float m = row_max(xr, k);
    float s = 0.0f;
#pragma omp simd reduction(+ : s)
    for (std::int64_t j = 0; j < k; ++j) {
      const float e = f.shifted_exp(xr[j], m);  // parked in y (x is not read again at j)
      yr[j] = e;
      s += e;
    }
    const float inv = f.inverse(s);
#pragma omp simd
    for (std::int64_t j = 0; j < k; ++j) yr[j] = f(yr[j], inv);
  }
}

ENGINE_CPU_CLONES void softmax_backward(const float* y, const float* dy, float* dx, std::int64_t rows,
                                        std::int64_t k) {
  cpu::check_softmax_sizes("softmax_backward", rows, k);
  const elementwise::Softmax f;
#pragma omp parallel for if (rows * k >= kParallelMinElements) schedule(static)
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* yr = y + r * k;
    const float* dyr = dy + r * k;
    float d = 0.0f;
#pragma omp simd reduction(+ : d)
    for (std::int64_t j = 0; j < k; ++j) d += dyr[j] * yr[j];
#pragma omp simd
    for (std::int64_t j = 0; j < k; ++j) dx[r * k + j] = f.grad(yr[j], dyr[j], d);
  }
}

}  // namespace engine::cpu_fast
