#include "kernels/cpu_fast/linear.h"

#include <algorithm>
#include <cstdint>

#include "core/error.h"
#include "kernels/cpu_fast/gemm.h"

namespace engine::cpu_fast {

void linear_forward(const LinearShape& g, const float* x, const float* w, const float* bias, float* y) {
  g.validate();
  ENGINE_CHECK(x != nullptr && w != nullptr && y != nullptr, "linear_forward: x, w and y must not be null");
  const std::int64_t n = g.n, in = g.in_features, out = g.out_features;
  if (bias != nullptr) {
    for (std::int64_t i = 0; i < n; ++i) std::copy(bias, bias + out, y + i * out);
  }
  sgemm(Trans::No, Trans::Yes, n, out, in, 1.0f, x, in, w, in, bias != nullptr ? 1.0f : 0.0f, y, out);
}

void linear_backward(const LinearShape& g, const float* x, const float* w, const float* dy, float* dx,
                     float* dw, float* db) {
  g.validate();
  ENGINE_CHECK(x != nullptr && w != nullptr && dy != nullptr && dw != nullptr,
               "linear_backward: x, w, dy and dw must not be null (dx and db may be)");
  const std::int64_t n = g.n, in = g.in_features, out = g.out_features;
  if (dx != nullptr) sgemm(Trans::No, Trans::No, n, in, out, 1.0f, dy, out, w, in, 0.0f, dx, in);
  sgemm(Trans::Yes, Trans::No, out, in, n, 1.0f, dy, out, x, in, 0.0f, dw, in);
  if (db != nullptr) {
    for (std::int64_t o = 0; o < out; ++o) {
      double acc = 0.0;
      for (std::int64_t i = 0; i < n; ++i) acc += static_cast<double>(dy[i * out + o]);
      db[o] = static_cast<float>(acc);
    }
  }
}

}  // namespace engine::cpu_fast
