#include "kernels/cpu/flatten.h"

#include <algorithm>
#include <cstdint>

#include "core/error.h"

namespace engine::cpu {
namespace {

template <typename T>
void copy_nchw(const char* what, int n, int c, int h, int w, const T* in, T* out) {
  ENGINE_CHECK(n > 0 && c > 0 && h > 0 && w > 0, "{}: input sizes must be positive, got n={} c={} h={} w={}",
               what, n, c, h, w);
  if (in == out) return;
  const std::int64_t count = static_cast<std::int64_t>(n) * c * h * w;
  std::copy(in, in + count, out);
}

}  // namespace

template <typename T>
void flatten_forward(int n, int c, int h, int w, const T* x, T* y) {
  copy_nchw("flatten_forward", n, c, h, w, x, y);
}

template <typename T>
void flatten_backward(int n, int c, int h, int w, const T* dy, T* dx) {
  copy_nchw("flatten_backward", n, c, h, w, dy, dx);
}

template void flatten_forward<float>(int, int, int, int, const float*, float*);
template void flatten_forward<double>(int, int, int, int, const double*, double*);
template void flatten_backward<float>(int, int, int, int, const float*, float*);
template void flatten_backward<double>(int, int, int, int, const double*, double*);

}  // namespace engine::cpu
