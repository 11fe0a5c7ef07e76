#include "kernels/cpu/avgpool.h"

#include <cstdint>

#include "core/error.h"

namespace engine::cpu {

void check_global_avgpool_shape(const char* what, int n, int c, int h, int w) {
  ENGINE_CHECK(n > 0 && c > 0 && h > 0 && w > 0, "{}: input sizes must be positive, got n={} c={} h={} w={}",
               what, n, c, h, w);
}

template <typename T>
void global_avgpool_forward(int n, int c, int h, int w, const T* x, T* y) {
  check_global_avgpool_shape("global_avgpool_forward", n, c, h, w);
  const std::int64_t planes = static_cast<std::int64_t>(n) * c;
  const std::int64_t plane_size = static_cast<std::int64_t>(h) * w;
  for (std::int64_t plane = 0; plane < planes; ++plane) {
    double sum = 0.0;
    for (std::int64_t i = 0; i < plane_size; ++i) sum += static_cast<double>(x[plane * plane_size + i]);
    y[plane] = static_cast<T>(sum / static_cast<double>(plane_size));
  }
}

template <typename T>
void global_avgpool_backward(int n, int c, int h, int w, const T* dy, T* dx) {
  check_global_avgpool_shape("global_avgpool_backward", n, c, h, w);
  const std::int64_t planes = static_cast<std::int64_t>(n) * c;
  const std::int64_t plane_size = static_cast<std::int64_t>(h) * w;
  for (std::int64_t plane = 0; plane < planes; ++plane) {
    const T g = static_cast<T>(static_cast<double>(dy[plane]) / static_cast<double>(plane_size));
    for (std::int64_t i = 0; i < plane_size; ++i) dx[plane * plane_size + i] = g;
  }
}

template void global_avgpool_forward<float>(int, int, int, int, const float*, float*);
template void global_avgpool_forward<double>(int, int, int, int, const double*, double*);
template void global_avgpool_backward<float>(int, int, int, int, const float*, float*);
template void global_avgpool_backward<double>(int, int, int, int, const double*, double*);

}  // namespace engine::cpu
