#include "kernels/cpu/gelu.h"

#include <cmath>
#include <numbers>

#include "core/error.h"

namespace engine::cpu {

namespace {

constexpr double kInvSqrt2 = 1.0 / std::numbers::sqrt2;
constexpr double kInvSqrt2Pi = std::numbers::inv_sqrtpi / std::numbers::sqrt2;

double gelu(double x) { return 0.5 * x * std::erfc(-x * kInvSqrt2); }

double gelu_grad(double x) {
  return 0.5 * std::erfc(-x * kInvSqrt2) + x * kInvSqrt2Pi * std::exp(-0.5 * x * x);
}

}  // namespace

template <typename T>
void gelu_forward(const T* x, T* y, std::int64_t n) {
  ENGINE_CHECK(n >= 0, "gelu_forward: element count must be non-negative, got {}", n);
  for (std::int64_t i = 0; i < n; ++i) y[i] = static_cast<T>(gelu(static_cast<double>(x[i])));
}

template <typename T>
void gelu_backward(const T* x, const T* dy, T* dx, std::int64_t n) {
  ENGINE_CHECK(n >= 0, "gelu_backward: element count must be non-negative, got {}", n);
  for (std::int64_t i = 0; i < n; ++i) {
    dx[i] = static_cast<T>(static_cast<double>(dy[i]) * gelu_grad(static_cast<double>(x[i])));
  }
}

template void gelu_forward<float>(const float*, float*, std::int64_t);
template void gelu_forward<double>(const double*, double*, std::int64_t);
template void gelu_backward<float>(const float*, const float*, float*, std::int64_t);
template void gelu_backward<double>(const double*, const double*, double*, std::int64_t);

}  // namespace engine::cpu
