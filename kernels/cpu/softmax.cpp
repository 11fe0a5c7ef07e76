#include "kernels/cpu/softmax.h"

#include <cmath>
#include <vector>

#include "core/error.h"

namespace engine::cpu {

void check_softmax_sizes(const char* op, std::int64_t rows, std::int64_t k) {
  ENGINE_CHECK(rows >= 0 && k >= 1, "{}: rows must be non-negative and the row length positive, got {} x {}",
               op, rows, k);
}

template <typename T>
void softmax_forward(const T* x, T* y, std::int64_t rows, std::int64_t k) {
  check_softmax_sizes("softmax_forward", rows, k);
  std::vector<double> e(static_cast<std::size_t>(k));
  for (std::int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * k;
    double m = static_cast<double>(xr[0]);
    for (std::int64_t j = 1; j < k; ++j) m = std::fmax(m, static_cast<double>(xr[j]));
    double s = 0.0;
    for (std::int64_t j = 0; j < k; ++j) {
      e[static_cast<std::size_t>(j)] = std::exp(static_cast<double>(xr[j]) - m);
      s += e[static_cast<std::size_t>(j)];
    }
    for (std::int64_t j = 0; j < k; ++j) y[r * k + j] = static_cast<T>(e[static_cast<std::size_t>(j)] / s);
  }
}

template <typename T>
void softmax_backward(const T* y, const T* dy, T* dx, std::int64_t rows, std::int64_t k) {
  check_softmax_sizes("softmax_backward", rows, k);
  for (std::int64_t r = 0; r < rows; ++r) {
    const T* yr = y + r * k;
    const T* dyr = dy + r * k;
    double d = 0.0;
    for (std::int64_t j = 0; j < k; ++j) d += static_cast<double>(dyr[j]) * static_cast<double>(yr[j]);
    for (std::int64_t j = 0; j < k; ++j) {
      dx[r * k + j] = static_cast<T>(static_cast<double>(yr[j]) * (static_cast<double>(dyr[j]) - d));
    }
  }
}

template void softmax_forward<float>(const float*, float*, std::int64_t, std::int64_t);
template void softmax_forward<double>(const double*, double*, std::int64_t, std::int64_t);
template void softmax_backward<float>(const float*, const float*, float*, std::int64_t, std::int64_t);
template void softmax_backward<double>(const double*, const double*, double*, std::int64_t, std::int64_t);

}  // namespace engine::cpu
