#include "kernels/cpu/relu.h"

#include <cmath>

#include "core/error.h"

namespace engine::cpu {

template <typename T>
void relu_forward(const T* x, T* y, std::int64_t n) {
  ENGINE_CHECK(n >= 0, "relu_forward: element count must be non-negative, got {}", n);
  for (std::int64_t i = 0; i < n; ++i) {
    // Written so NaN propagates: only a value that is not > 0 and not NaN becomes 0.
    y[i] = (x[i] > T(0) || std::isnan(x[i])) ? x[i] : T(0);
  }
}

template <typename T>
void relu_backward(const T* x, const T* dy, T* dx, std::int64_t n) {
  ENGINE_CHECK(n >= 0, "relu_backward: element count must be non-negative, got {}", n);
  for (std::int64_t i = 0; i < n; ++i) dx[i] = x[i] > T(0) ? dy[i] : T(0);
}

template void relu_forward<float>(const float*, float*, std::int64_t);
template void relu_forward<double>(const double*, double*, std::int64_t);
template void relu_backward<float>(const float*, const float*, float*, std::int64_t);
template void relu_backward<double>(const double*, const double*, double*, std::int64_t);

}  // namespace engine::cpu
