#include "kernels/cpu/residual_add.h"

#include "core/error.h"

namespace engine::cpu {

template <typename T>
void residual_add_forward(const T* a, const T* b, T* y, std::int64_t n) {
  ENGINE_CHECK(n >= 0, "residual_add_forward: element count must be non-negative, got {}", n);
  for (std::int64_t i = 0; i < n; ++i)
    y[i] = static_cast<T>(static_cast<double>(a[i]) + static_cast<double>(b[i]));
}

template <typename T>
void residual_add_backward(const T* dy, T* da, T* db, std::int64_t n) {
  ENGINE_CHECK(n >= 0, "residual_add_backward: element count must be non-negative, got {}", n);
  for (std::int64_t i = 0; i < n; ++i) {
    const T g = dy[i];  // read once, so da or db may alias dy
    da[i] = g;
    db[i] = g;
  }
}

template void residual_add_forward<float>(const float*, const float*, float*, std::int64_t);
template void residual_add_forward<double>(const double*, const double*, double*, std::int64_t);
template void residual_add_backward<float>(const float*, float*, float*, std::int64_t);
template void residual_add_backward<double>(const double*, double*, double*, std::int64_t);

}  // namespace engine::cpu
