#include "kernels/cpu/linear.h"

#include "core/error.h"

namespace engine::cpu {
namespace {

// Offset of element (row, col) in a contiguous [rows, cols] array, in size_t so large tensors do not
// overflow.
inline std::size_t offset2(int row, int col, int cols) {
  return static_cast<std::size_t>(row) * static_cast<std::size_t>(cols) + static_cast<std::size_t>(col);
}

}  // namespace

LinearShape linear_shape(const std::array<int, 2>& x_dims, const std::array<int, 2>& w_dims) {
  ENGINE_CHECK(x_dims[1] == w_dims[1], "linear: x[{}, {}] has {} features, weight [{}, {}] expects {}",
               x_dims[0], x_dims[1], x_dims[1], w_dims[0], w_dims[1], w_dims[1]);
  const LinearShape shape{.n = x_dims[0], .in_features = x_dims[1], .out_features = w_dims[0]};
  shape.validate();
  return shape;
}

template <typename T>
void linear_forward(const LinearShape& g, const T* x, const T* w, const T* bias, T* y) {
  g.validate();
  ENGINE_CHECK(x != nullptr && w != nullptr && y != nullptr, "linear_forward: x, w and y must not be null");
  for (int i = 0; i < g.n; ++i) {
    for (int o = 0; o < g.out_features; ++o) {
      double acc = bias != nullptr ? static_cast<double>(bias[o]) : 0.0;
      for (int j = 0; j < g.in_features; ++j) {
        acc += static_cast<double>(x[offset2(i, j, g.in_features)]) *
               static_cast<double>(w[offset2(o, j, g.in_features)]);
      }
      y[offset2(i, o, g.out_features)] = static_cast<T>(acc);
    }
  }
}

template <typename T>
void linear_backward(const LinearShape& g, const T* x, const T* w, const T* dy, T* dx, T* dw, T* db) {
  g.validate();
  ENGINE_CHECK(x != nullptr && w != nullptr && dy != nullptr && dw != nullptr,
               "linear_backward: x, w, dy and dw must not be null (dx and db may be)");
  if (dx != nullptr) {
    for (int i = 0; i < g.n; ++i) {
      for (int j = 0; j < g.in_features; ++j) {
        double acc = 0.0;
        for (int o = 0; o < g.out_features; ++o) {
          acc += static_cast<double>(dy[offset2(i, o, g.out_features)]) *
                 static_cast<double>(w[offset2(o, j, g.in_features)]);
        }
        dx[offset2(i, j, g.in_features)] = static_cast<T>(acc);
      }
    }
  }
  for (int o = 0; o < g.out_features; ++o) {
    for (int j = 0; j < g.in_features; ++j) {
      double acc = 0.0;
      for (int i = 0; i < g.n; ++i) {
        acc += static_cast<double>(dy[offset2(i, o, g.out_features)]) *
               static_cast<double>(x[offset2(i, j, g.in_features)]);
      }
      dw[offset2(o, j, g.in_features)] = static_cast<T>(acc);
    }
  }
  if (db != nullptr) {
    for (int o = 0; o < g.out_features; ++o) {
      double acc = 0.0;
      for (int i = 0; i < g.n; ++i) acc += static_cast<double>(dy[offset2(i, o, g.out_features)]);
      db[o] = static_cast<T>(acc);
    }
  }
}

template void linear_forward<float>(const LinearShape&, const float*, const float*, const float*, float*);
template void linear_forward<double>(const LinearShape&, const double*, const double*, const double*,
                                     double*);
template void linear_backward<float>(const LinearShape&, const float*, const float*, const float*, float*,
                                     float*, float*);
template void linear_backward<double>(const LinearShape&, const double*, const double*, const double*,
                                      double*, double*, double*);

}  // namespace engine::cpu
