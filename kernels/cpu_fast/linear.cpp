#include "kernels/cpu_fast/linear.h"

#include <algorithm>
#include <cstdint>

#include "core/error.h"
#include "kernels/cpu_fast/bf16_io.h"
#include "kernels/cpu_fast/gemm.h"

namespace engine::cpu_fast {
namespace {

// db = the column sums of dy [n, out], in double.
template <typename T>
void column_sums(const T* dy, std::int64_t n, std::int64_t out, float* db) {
  for (std::int64_t o = 0; o < out; ++o) {
    double acc = 0.0;
    for (std::int64_t i = 0; i < n; ++i) acc += static_cast<double>(loaded(dy[i * out + o]));
    db[o] = static_cast<float>(acc);
  }
}

void check_args(const LinearShape& g, const void* x, const void* w, const void* y) {
  g.validate();
  ENGINE_CHECK(x != nullptr && w != nullptr && y != nullptr, "linear_forward: x, w and y must not be null");
}

void check_args(const LinearShape& g, const void* x, const void* w, const void* dy, const void* dw) {
  g.validate();
  ENGINE_CHECK(x != nullptr && w != nullptr && dy != nullptr && dw != nullptr,
               "linear_backward: x, w, dy and dw must not be null (dx and db may be)");
}

}  // namespace

void linear_forward(const LinearShape& g, const float* x, const float* w, const float* bias, float* y) {
  check_args(g, x, w, y);
  const std::int64_t n = g.n, in = g.in_features, out = g.out_features;
  if (bias != nullptr) {
    for (std::int64_t i = 0; i < n; ++i) std::copy(bias, bias + out, y + i * out);
  }
  sgemm(Trans::No, Trans::Yes, n, out, in, 1.0f, x, in, w, in, bias != nullptr ? 1.0f : 0.0f, y, out);
}

void linear_backward(const LinearShape& g, const float* x, const float* w, const float* dy, float* dx,
                     float* dw, float* db) {
  check_args(g, x, w, dy, dw);
  const std::int64_t n = g.n, in = g.in_features, out = g.out_features;
  if (dx != nullptr) sgemm(Trans::No, Trans::No, n, in, out, 1.0f, dy, out, w, in, 0.0f, dx, in);
  sgemm(Trans::Yes, Trans::No, out, in, n, 1.0f, dy, out, x, in, 0.0f, dw, in);
  if (db != nullptr) column_sums(dy, n, out, db);
}

void linear_forward(const LinearShape& g, const bfloat16* x, const bfloat16* w, const float* bias, float* y) {
  check_args(g, x, w, y);
  const std::int64_t n = g.n, in = g.in_features, out = g.out_features;
  gemm_bf16(Trans::No, Trans::Yes, n, out, in, x, w, y);
  if (bias != nullptr) {
    for (std::int64_t i = 0; i < n; ++i) {
      for (std::int64_t o = 0; o < out; ++o) y[i * out + o] += bias[o];
    }
  }
}

void linear_backward(const LinearShape& g, const bfloat16* x, const bfloat16* w, const bfloat16* dy,
                     float* dx, float* dw, float* db) {
  check_args(g, x, w, dy, dw);
  const std::int64_t n = g.n, in = g.in_features, out = g.out_features;
  if (dx != nullptr) gemm_bf16(Trans::No, Trans::No, n, in, out, dy, w, dx);
  gemm_bf16(Trans::Yes, Trans::No, out, in, n, dy, x, dw);
  if (db != nullptr) column_sums(dy, n, out, db);
}

}  // namespace engine::cpu_fast
