#include "kernels/cpu_fast/conv2d.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/error.h"
#include "kernels/cpu_fast/gemm.h"

namespace engine::cpu_fast {
namespace {

using std::int64_t;

// The convolution reads the image itself: no unfolding needed.
bool is_pointwise(const cpu::Conv2dShape& g) {
  return g.r == 1 && g.s == 1 && g.stride_h == 1 && g.stride_w == 1 && g.pad_h == 0 && g.pad_w == 0;
}

// col[(c*R + r)*S + s][p*Q + q] = x[c][p*stride_h - pad_h + r][q*stride_w - pad_w + s], 0 in the padding.
void im2col(const cpu::Conv2dShape& g, const float* x, float* col) {
  const int P = g.p(), Q = g.q();
  for (int c = 0; c < g.c; ++c) {
    const float* plane = x + static_cast<int64_t>(c) * g.h * g.w;
    for (int r = 0; r < g.r; ++r) {
      for (int s = 0; s < g.s; ++s) {
        float* out = col + ((static_cast<int64_t>(c) * g.r + r) * g.s + s) * P * Q;
        for (int p = 0; p < P; ++p) {
          const int i = p * g.stride_h - g.pad_h + r;
          float* row = out + static_cast<int64_t>(p) * Q;
          if (i < 0 || i >= g.h) {
            std::fill(row, row + Q, 0.0f);
            continue;
          }
          const float* src = plane + static_cast<int64_t>(i) * g.w;
          // Columns q with 0 <= q*stride - pad + s < W form one range [q0, q1): zeros around a strided copy.
          const int q0 = std::clamp((g.pad_w - s + g.stride_w - 1) / g.stride_w, 0, Q);
          const int q1 = std::clamp((g.w + g.pad_w - s + g.stride_w - 1) / g.stride_w, q0, Q);
          std::fill(row, row + q0, 0.0f);
          if (q1 > q0) {
            const float* first = src + (q0 * g.stride_w - g.pad_w + s);
            if (g.stride_w == 1) {
              std::copy(first, first + (q1 - q0), row + q0);
            } else {
              for (int q = q0; q < q1; ++q) row[q] = first[(q - q0) * g.stride_w];
            }
          }
          std::fill(row + q1, row + Q, 0.0f);
        }
      }
    }
  }
}

// The adjoint of im2col: dx[c][i][j] += every col entry that im2col read from (c, i, j). dx must be zeroed.
void col2im(const cpu::Conv2dShape& g, const float* col, float* dx) {
  const int P = g.p(), Q = g.q();
  for (int c = 0; c < g.c; ++c) {
    float* plane = dx + static_cast<int64_t>(c) * g.h * g.w;
    for (int r = 0; r < g.r; ++r) {
      for (int s = 0; s < g.s; ++s) {
        const float* in = col + ((static_cast<int64_t>(c) * g.r + r) * g.s + s) * P * Q;
        for (int p = 0; p < P; ++p) {
          const int i = p * g.stride_h - g.pad_h + r;
          if (i < 0 || i >= g.h) continue;
          const float* row = in + static_cast<int64_t>(p) * Q;
          float* dst = plane + static_cast<int64_t>(i) * g.w;
          for (int q = 0; q < Q; ++q) {
            const int j = q * g.stride_w - g.pad_w + s;
            if (j >= 0 && j < g.w) dst[j] += row[q];
          }
        }
      }
    }
  }
}

}  // namespace

void conv2d_forward(const cpu::Conv2dShape& g, const float* x, const float* w, const float* bias, float* y) {
  g.validate();
  ENGINE_CHECK(x != nullptr && w != nullptr && y != nullptr, "conv2d_forward: x, w and y must not be null");
  const int64_t pq = static_cast<int64_t>(g.p()) * g.q();
  const int64_t crs = static_cast<int64_t>(g.c) * g.r * g.s;
  const int64_t image = static_cast<int64_t>(g.c) * g.h * g.w;
  const bool pointwise = is_pointwise(g);
  std::vector<float> col(pointwise ? 0 : static_cast<std::size_t>(crs * pq));
  for (int n = 0; n < g.n; ++n) {
    const float* xn = x + n * image;
    float* yn = y + n * g.k * pq;
    if (!pointwise) im2col(g, xn, col.data());
    if (bias != nullptr) {
      for (int k = 0; k < g.k; ++k) std::fill(yn + k * pq, yn + (k + 1) * pq, bias[k]);
    }
    sgemm(Trans::No, Trans::No, g.k, pq, crs, 1.0f, w, crs, pointwise ? xn : col.data(), pq,
          bias != nullptr ? 1.0f : 0.0f, yn, pq);
  }
}

void conv2d_backward(const cpu::Conv2dShape& g, const float* x, const float* w, const float* dy, float* dx,
                     float* dw, float* db) {
  g.validate();
  ENGINE_CHECK(x != nullptr && w != nullptr && dy != nullptr && dw != nullptr,
               "conv2d_backward: x, w, dy and dw must not be null (dx and db may be)");
  const int64_t pq = static_cast<int64_t>(g.p()) * g.q();
  const int64_t crs = static_cast<int64_t>(g.c) * g.r * g.s;
  const int64_t image = static_cast<int64_t>(g.c) * g.h * g.w;
  const bool pointwise = is_pointwise(g);
  std::vector<float> col(pointwise ? 0 : static_cast<std::size_t>(crs * pq));
  for (int n = 0; n < g.n; ++n) {
    const float* xn = x + n * image;
    const float* dyn = dy + n * g.k * pq;
    if (!pointwise) im2col(g, xn, col.data());
    // dW (+)= dy[n] * col^T: the first image overwrites, the others add.
    sgemm(Trans::No, Trans::Yes, g.k, crs, pq, 1.0f, dyn, pq, pointwise ? xn : col.data(), pq,
          n == 0 ? 0.0f : 1.0f, dw, crs);
    if (dx != nullptr) {
      float* dxn = dx + n * image;
      if (pointwise) {
        sgemm(Trans::Yes, Trans::No, crs, pq, g.k, 1.0f, w, crs, dyn, pq, 0.0f, dxn, pq);
      } else {
        sgemm(Trans::Yes, Trans::No, crs, pq, g.k, 1.0f, w, crs, dyn, pq, 0.0f, col.data(), pq);
        std::fill(dxn, dxn + image, 0.0f);
        col2im(g, col.data(), dxn);
      }
    }
  }
  if (db != nullptr) {
    for (int k = 0; k < g.k; ++k) {
      double acc = 0.0;
      for (int n = 0; n < g.n; ++n) {
        const float* plane = dy + (static_cast<int64_t>(n) * g.k + k) * pq;
        for (int64_t i = 0; i < pq; ++i) acc += static_cast<double>(plane[i]);
      }
      db[k] = static_cast<float>(acc);
    }
  }
}

}  // namespace engine::cpu_fast
