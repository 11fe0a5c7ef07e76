#include "kernels/cpu_fast/softmax.h"

#include <cmath>

#include "kernels/cpu/softmax.h"
#include "kernels/cpu_fast/parallel.h"
#include "kernels/softmax_math.h"

namespace engine::cpu_fast {

void softmax_forward(const float* x, float* y, std::int64_t rows, std::int64_t k) {
  cpu::check_softmax_sizes("softmax_forward", rows, k);
  const elementwise::Softmax f;
#pragma omp parallel for if (rows * k >= kParallelMinElements) schedule(static)
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * k;
    float* yr = y + r * k;
    float m = xr[0];
    for (std::int64_t j = 1; j < k; ++j) m = std::fmax(m, xr[j]);  // fmax skips NaN; the sum below keeps it
    float s = 0.0f;
    for (std::int64_t j = 0; j < k; ++j) {
      yr[j] = f.shifted_exp(xr[j], m);  // e_j, parked in y (x is not read again at j)
      s += yr[j];
    }
    for (std::int64_t j = 0; j < k; ++j) yr[j] = f(yr[j], s);
  }
}

void softmax_backward(const float* y, const float* dy, float* dx, std::int64_t rows, std::int64_t k) {
  cpu::check_softmax_sizes("softmax_backward", rows, k);
  const elementwise::Softmax f;
#pragma omp parallel for if (rows * k >= kParallelMinElements) schedule(static)
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* yr = y + r * k;
    const float* dyr = dy + r * k;
    float d = 0.0f;
    for (std::int64_t j = 0; j < k; ++j) d += dyr[j] * yr[j];
    for (std::int64_t j = 0; j < k; ++j) dx[r * k + j] = f.grad(yr[j], dyr[j], d);
  }
}

}  // namespace engine::cpu_fast
