#include "kernels/cpu/conv2d.h"

#include "core/error.h"

namespace engine::cpu {
namespace {

// Offset of element (a, b, c, d) in a contiguous [A, B, C, D] array, in size_t so large tensors do not
// overflow int.
inline std::size_t offset4(int a, int b, int c, int d, int dim_b, int dim_c, int dim_d) {
  return ((static_cast<std::size_t>(a) * static_cast<std::size_t>(dim_b) + static_cast<std::size_t>(b)) *
              static_cast<std::size_t>(dim_c) +
          static_cast<std::size_t>(c)) *
             static_cast<std::size_t>(dim_d) +
         static_cast<std::size_t>(d);
}

}  // namespace

Conv2dShape conv2d_shape(const std::array<int, 4>& x_dims, const std::array<int, 4>& w_dims, int stride_h,
                         int stride_w, int pad_h, int pad_w, int groups, int dilation_h, int dilation_w) {
  ENGINE_CHECK(
      groups > 0 && x_dims[1] == w_dims[1] * groups,
      "conv2d: weight [{}, {}, {}, {}] has {} input channels{}, input x has {}", w_dims[0], w_dims[1],
      w_dims[2], w_dims[3], w_dims[1],
      groups == 1 ? "" : fmt::format(" per group ({} groups: {} in all)", groups, w_dims[1] * groups),
      x_dims[1]);
  const Conv2dShape shape{.n = x_dims[0],
                          .c = x_dims[1],
                          .h = x_dims[2],
                          .w = x_dims[3],
                          .k = w_dims[0],
                          .r = w_dims[2],
                          .s = w_dims[3],
                          .stride_h = stride_h,
                          .stride_w = stride_w,
                          .pad_h = pad_h,
                          .pad_w = pad_w,
                          .groups = groups,
                          .dilation_h = dilation_h,
                          .dilation_w = dilation_w};
  shape.validate();
  return shape;
}

// Within a group, input channel c of the weight is channel first_c + c of x; output channel k belongs to
// group k / (K/G), whose first input channel is that times C/G.
template <typename T>
void conv2d_forward(const Conv2dShape& g, const T* x, const T* w, const T* bias, T* y) {
  g.validate();
  ENGINE_CHECK(x != nullptr && w != nullptr && y != nullptr, "conv2d_forward: x, w and y must not be null");
  const int P = g.p(), Q = g.q(), CG = g.c_per_group();
  for (int n = 0; n < g.n; ++n) {
    for (int k = 0; k < g.k; ++k) {
      const int first_c = k / g.k_per_group() * CG;
      for (int p = 0; p < P; ++p) {
        for (int q = 0; q < Q; ++q) {
          double acc = bias != nullptr ? static_cast<double>(bias[k]) : 0.0;
          for (int c = 0; c < CG; ++c) {
            for (int r = 0; r < g.r; ++r) {
              const int i = p * g.stride_h - g.pad_h + r * g.dilation_h;
              if (i < 0 || i >= g.h) continue;
              for (int s = 0; s < g.s; ++s) {
                const int j = q * g.stride_w - g.pad_w + s * g.dilation_w;
                if (j < 0 || j >= g.w) continue;
                acc += static_cast<double>(x[offset4(n, first_c + c, i, j, g.c, g.h, g.w)]) *
                       static_cast<double>(w[offset4(k, c, r, s, CG, g.r, g.s)]);
              }
            }
          }
          y[offset4(n, k, p, q, g.k, P, Q)] = static_cast<T>(acc);
        }
      }
    }
  }
}

template <typename T>
void conv2d_backward(const Conv2dShape& g, const T* x, const T* w, const T* dy, T* dx, T* dw, T* db) {
  g.validate();
  ENGINE_CHECK(x != nullptr && w != nullptr && dy != nullptr && dw != nullptr,
               "conv2d_backward: x, w, dy and dw must not be null (dx and db may be)");
  const int P = g.p(), Q = g.q(), CG = g.c_per_group(), KG = g.k_per_group();

  // dx, gathered: input row i is touched by output row p through kernel row r where
  // p*stride - pad + r*dilation = i, i.e. p*stride = i + pad - r*dilation; enumerate r and keep those for
  // which p is a whole number in [0, P). Input channel c reaches the output channels of its group only.
  if (dx != nullptr) {
    for (int n = 0; n < g.n; ++n) {
      for (int c = 0; c < g.c; ++c) {
        const int group = c / CG, wc = c - group * CG;
        for (int i = 0; i < g.h; ++i) {
          for (int j = 0; j < g.w; ++j) {
            double acc = 0.0;
            for (int k = group * KG; k < (group + 1) * KG; ++k) {
              for (int r = 0; r < g.r; ++r) {
                const int ti = i + g.pad_h - r * g.dilation_h;
                if (ti < 0 || ti % g.stride_h != 0 || ti / g.stride_h >= P) continue;
                const int p = ti / g.stride_h;
                for (int s = 0; s < g.s; ++s) {
                  const int tj = j + g.pad_w - s * g.dilation_w;
                  if (tj < 0 || tj % g.stride_w != 0 || tj / g.stride_w >= Q) continue;
                  const int q = tj / g.stride_w;
                  acc += static_cast<double>(dy[offset4(n, k, p, q, g.k, P, Q)]) *
                         static_cast<double>(w[offset4(k, wc, r, s, CG, g.r, g.s)]);
                }
              }
            }
            dx[offset4(n, c, i, j, g.c, g.h, g.w)] = static_cast<T>(acc);
          }
        }
      }
    }
  }

  for (int k = 0; k < g.k; ++k) {
    const int first_c = k / KG * CG;
    for (int c = 0; c < CG; ++c) {
      for (int r = 0; r < g.r; ++r) {
        for (int s = 0; s < g.s; ++s) {
          double acc = 0.0;
          for (int n = 0; n < g.n; ++n) {
            for (int p = 0; p < P; ++p) {
              const int i = p * g.stride_h - g.pad_h + r * g.dilation_h;
              if (i < 0 || i >= g.h) continue;
              for (int q = 0; q < Q; ++q) {
                const int j = q * g.stride_w - g.pad_w + s * g.dilation_w;
                if (j < 0 || j >= g.w) continue;
                acc += static_cast<double>(dy[offset4(n, k, p, q, g.k, P, Q)]) *
                       static_cast<double>(x[offset4(n, first_c + c, i, j, g.c, g.h, g.w)]);
              }
            }
          }
          dw[offset4(k, c, r, s, CG, g.r, g.s)] = static_cast<T>(acc);
        }
      }
    }
  }

  if (db != nullptr) {
    for (int k = 0; k < g.k; ++k) {
      double acc = 0.0;
      for (int n = 0; n < g.n; ++n) {
        for (int p = 0; p < P; ++p) {
          for (int q = 0; q < Q; ++q) acc += static_cast<double>(dy[offset4(n, k, p, q, g.k, P, Q)]);
        }
      }
      db[k] = static_cast<T>(acc);
    }
  }
}

template void conv2d_forward<float>(const Conv2dShape&, const float*, const float*, const float*, float*);
template void conv2d_forward<double>(const Conv2dShape&, const double*, const double*, const double*,
                                     double*);
template void conv2d_backward<float>(const Conv2dShape&, const float*, const float*, const float*, float*,
                                     float*, float*);
template void conv2d_backward<double>(const Conv2dShape&, const double*, const double*, const double*,
                                      double*, double*, double*);

}  // namespace engine::cpu
