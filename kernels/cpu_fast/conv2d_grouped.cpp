#include "kernels/cpu_fast/conv2d_grouped.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/error.h"
#include "kernels/cpu_fast/parallel.h"

namespace engine::cpu_fast {
namespace {

using Index = std::int64_t;

// The outputs [lo, hi) along one axis whose tap at `offset` (tap index x dilation - padding) reads inside
// [0, size): out x stride + offset in [0, size).
struct Range {
  int lo, hi;
};

int ceil_div(int a, int b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }
int floor_div(int a, int b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

Range valid(int offset, int stride, int size, int outputs) {
  const int lo = std::max(0, ceil_div(-offset, stride));
  const int hi = std::min(outputs, floor_div(size - 1 - offset, stride) + 1);
  return {lo, std::max(lo, hi)};
}

// Parallel only where the work is worth a team's wake-up (kernels/cpu_fast/parallel.h).
bool worth_threads(const Conv2dShape& g) {
  return static_cast<Index>(g.y_size()) * g.c_per_group() * g.r * g.s >= kParallelMinElements;
}

// y_plane[p, q] += sum over taps of w[r, s] x_plane[p sh - ph + r dh, q sw - pw + s dw].
void accumulate_plane(const Conv2dShape& g, const float* x_plane, const float* w_taps, float* y_plane) {
  const int P = g.p(), Q = g.q();
  for (int p = 0; p < P; ++p) {
    float* yrow = y_plane + static_cast<Index>(p) * Q;
    for (int r = 0; r < g.r; ++r) {
      const int ih = p * g.stride_h - g.pad_h + r * g.dilation_h;
      if (ih < 0 || ih >= g.h) continue;
      const float* xrow = x_plane + static_cast<Index>(ih) * g.w;
      for (int s = 0; s < g.s; ++s) {
        const int offset = s * g.dilation_w - g.pad_w;
        const Range q = valid(offset, g.stride_w, g.w, Q);
        const float wv = w_taps[r * g.s + s];
        for (int j = q.lo; j < q.hi; ++j) yrow[j] += wv * xrow[j * g.stride_w + offset];
      }
    }
  }
}

// dx_plane[p sh - ph + r dh, q sw - pw + s dw] += w[r, s] dy_plane[p, q], over the taps.
void scatter_plane(const Conv2dShape& g, const float* dy_plane, const float* w_taps, float* dx_plane) {
  const int P = g.p(), Q = g.q();
  for (int p = 0; p < P; ++p) {
    const float* dyrow = dy_plane + static_cast<Index>(p) * Q;
    for (int r = 0; r < g.r; ++r) {
      const int ih = p * g.stride_h - g.pad_h + r * g.dilation_h;
      if (ih < 0 || ih >= g.h) continue;
      float* dxrow = dx_plane + static_cast<Index>(ih) * g.w;
      for (int s = 0; s < g.s; ++s) {
        const int offset = s * g.dilation_w - g.pad_w;
        const Range q = valid(offset, g.stride_w, g.w, Q);
        const float wv = w_taps[r * g.s + s];
        for (int j = q.lo; j < q.hi; ++j) dxrow[j * g.stride_w + offset] += wv * dyrow[j];
      }
    }
  }
}

// acc[r, s] += sum over p, q of dy_plane[p, q] x_plane[p sh - ph + r dh, q sw - pw + s dw] (a float32 sum
// per tap and plane, added to the double total).
void correlate_plane(const Conv2dShape& g, const float* x_plane, const float* dy_plane, double* acc) {
  const int P = g.p(), Q = g.q();
  for (int r = 0; r < g.r; ++r)
    for (int s = 0; s < g.s; ++s) {
      const int offset = s * g.dilation_w - g.pad_w;
      const Range q = valid(offset, g.stride_w, g.w, Q);
      float sum = 0.0f;
      for (int p = 0; p < P; ++p) {
        const int ih = p * g.stride_h - g.pad_h + r * g.dilation_h;
        if (ih < 0 || ih >= g.h) continue;
        const float* xrow = x_plane + static_cast<Index>(ih) * g.w;
        const float* dyrow = dy_plane + static_cast<Index>(p) * Q;
#pragma omp simd reduction(+ : sum)
        for (int j = q.lo; j < q.hi; ++j) sum += dyrow[j] * xrow[j * g.stride_w + offset];
      }
      acc[r * g.s + s] += static_cast<double>(sum);
    }
}

}  // namespace

void grouped_conv2d_forward(const Conv2dShape& g, const float* x, const float* w, const float* bias,
                            float* y) {
  g.validate();
  ENGINE_CHECK(x != nullptr && w != nullptr && y != nullptr,
               "grouped_conv2d_forward: x, w and y must not be null");
  const int CG = g.c_per_group(), KG = g.k_per_group(), taps = g.r * g.s;
  const Index in_plane = static_cast<Index>(g.h) * g.w, out_plane = static_cast<Index>(g.p()) * g.q();
  const Index planes = static_cast<Index>(g.n) * g.k;
#pragma omp parallel for if (worth_threads(g)) schedule(static)
  for (Index i = 0; i < planes; ++i) {
    const Index n = i / g.k;
    const int k = static_cast<int>(i % g.k), first_c = k / KG * CG;
    float* y_plane = y + i * out_plane;
    std::fill(y_plane, y_plane + out_plane, bias != nullptr ? bias[k] : 0.0f);
    for (int c = 0; c < CG; ++c)
      accumulate_plane(g, x + (n * g.c + first_c + c) * in_plane, w + (static_cast<Index>(k) * CG + c) * taps,
                       y_plane);
  }
}

void grouped_conv2d_backward_data(const Conv2dShape& g, const float* w, const float* dy, float* dx) {
  g.validate();
  ENGINE_CHECK(w != nullptr && dy != nullptr && dx != nullptr,
               "grouped_conv2d_backward_data: w, dy and dx must not be null");
  const int CG = g.c_per_group(), KG = g.k_per_group(), taps = g.r * g.s;
  const Index in_plane = static_cast<Index>(g.h) * g.w, out_plane = static_cast<Index>(g.p()) * g.q();
  const Index planes = static_cast<Index>(g.n) * g.c;
#pragma omp parallel for if (worth_threads(g)) schedule(static)
  for (Index i = 0; i < planes; ++i) {
    const Index n = i / g.c;
    const int c = static_cast<int>(i % g.c), first_k = c / CG * KG, c_in_group = c % CG;
    float* dx_plane = dx + i * in_plane;
    std::fill(dx_plane, dx_plane + in_plane, 0.0f);
    for (int k = first_k; k < first_k + KG; ++k)
      scatter_plane(g, dy + (n * g.k + k) * out_plane, w + (static_cast<Index>(k) * CG + c_in_group) * taps,
                    dx_plane);
  }
}

void grouped_conv2d_backward_weights(const Conv2dShape& g, const float* x, const float* dy, float* dw,
                                     float* db) {
  g.validate();
  ENGINE_CHECK(x != nullptr && dy != nullptr && dw != nullptr,
               "grouped_conv2d_backward_weights: x, dy and dw must not be null (db may be)");
  const int CG = g.c_per_group(), KG = g.k_per_group(), taps = g.r * g.s;
  const Index in_plane = static_cast<Index>(g.h) * g.w, out_plane = static_cast<Index>(g.p()) * g.q();
  const Index slices = static_cast<Index>(g.k) * CG;  // dw[k, c, :, :]
#pragma omp parallel for if (worth_threads(g)) schedule(static)
  for (Index i = 0; i < slices; ++i) {
    const int k = static_cast<int>(i / CG), c = k / KG * CG + static_cast<int>(i % CG);
    std::vector<double> acc(static_cast<std::size_t>(taps), 0.0);
    double bias_sum = 0.0;
    const bool with_bias = db != nullptr && i % CG == 0;
    for (Index n = 0; n < g.n; ++n) {
      const float* dy_plane = dy + (n * g.k + k) * out_plane;
      correlate_plane(g, x + (n * g.c + c) * in_plane, dy_plane, acc.data());
      if (with_bias) {
        float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
        for (Index j = 0; j < out_plane; ++j) sum += dy_plane[j];
        bias_sum += static_cast<double>(sum);
      }
    }
    for (int t = 0; t < taps; ++t) dw[i * taps + t] = static_cast<float>(acc[static_cast<std::size_t>(t)]);
    if (with_bias) db[k] = static_cast<float>(bias_sum);
  }
}

}  // namespace engine::cpu_fast
