#include "kernels/cpu/dropout.h"

#include "core/error.h"
#include "core/philox.h"

namespace engine::cpu {
namespace {

void check_args(const char* what, float p, std::int64_t n) {
  // Written as a positive range test so that NaN fails it too.
  ENGINE_CHECK(p >= 0.0f && p <= 1.0f, "{}: drop probability p must be in [0, 1], got {}", what, p);
  ENGINE_CHECK(n >= 0, "{}: element count must be non-negative, got {}", what, n);
}

bool keep(float p, std::uint64_t seed, std::uint64_t offset, std::int64_t i) {
  return philox_uniform(seed, offset, static_cast<std::uint64_t>(i)) >= p;
}

// Shared by forward and backward: out[i] = keep(i) ? in[i] / (1 - p) : 0.
template <typename T>
void apply_mask(float p, std::uint64_t seed, std::uint64_t offset, const T* in, T* out, std::int64_t n) {
  if (p >= 1.0f) {  // nothing is kept; 1 / (1 - p) would divide by zero
    for (std::int64_t i = 0; i < n; ++i) out[i] = T(0);
    return;
  }
  const double scale = 1.0 / (1.0 - static_cast<double>(p));
  for (std::int64_t i = 0; i < n; ++i) {
    out[i] = keep(p, seed, offset, i) ? static_cast<T>(static_cast<double>(in[i]) * scale) : T(0);
  }
}

}  // namespace

void dropout_mask(float p, std::uint64_t seed, std::uint64_t offset, std::uint8_t* mask, std::int64_t n) {
  check_args("dropout_mask", p, n);
  for (std::int64_t i = 0; i < n; ++i) mask[i] = keep(p, seed, offset, i) ? 1 : 0;
}

template <typename T>
void dropout_forward(float p, std::uint64_t seed, std::uint64_t offset, const T* x, T* y, std::int64_t n) {
  check_args("dropout_forward", p, n);
  apply_mask(p, seed, offset, x, y, n);
}

template <typename T>
void dropout_backward(float p, std::uint64_t seed, std::uint64_t offset, const T* dy, T* dx, std::int64_t n) {
  check_args("dropout_backward", p, n);
  apply_mask(p, seed, offset, dy, dx, n);
}

template void dropout_forward<float>(float, std::uint64_t, std::uint64_t, const float*, float*, std::int64_t);
template void dropout_forward<double>(float, std::uint64_t, std::uint64_t, const double*, double*,
                                      std::int64_t);
template void dropout_backward<float>(float, std::uint64_t, std::uint64_t, const float*, float*,
                                      std::int64_t);
template void dropout_backward<double>(float, std::uint64_t, std::uint64_t, const double*, double*,
                                       std::int64_t);

}  // namespace engine::cpu
