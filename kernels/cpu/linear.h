#pragma once
// Fully connected layer (PyTorch's Linear), float64-accumulating CPU reference: the oracle every GPU GEMM
// path is tested against, and the CPU device's implementation. Plain loops, written to be read.
//
// Layouts, all contiguous, row-major:
//   x  [N, in]     input; an input with more leading dimensions is seen as N = their product
//   w  [out, in]   weight (PyTorch's layout, so y = x w^T)
//   b  [out]       optional bias
//   y  [N, out]    output
//
// Every sum is accumulated in double whatever the storage type T (float or double), and rounded to T once.

#include <array>
#include <cstddef>

#include "kernels/shapes.h"

namespace engine::cpu {

// The geometry of x[x_dims] times w[w_dims]^T; throws engine::Error when their `in` sizes differ or a size is
// not positive.
LinearShape linear_shape(const std::array<int, 2>& x_dims, const std::array<int, 2>& w_dims);

// y[i,o] = b[o] + sum_j x[i,j] * w[o,j]. bias may be nullptr (no bias).
template <typename T>
void linear_forward(const LinearShape& shape, const T* x, const T* w, const T* bias, T* y);

// Given dy = dL/dy [N, out], OVERWRITES (never accumulates into) the gradients:
//   dx[i,j] = sum_o dy[i,o] * w[o,j]      (dx = dy w)
//   dw[o,j] = sum_i dy[i,o] * x[i,j]      (dw = dy^T x)
//   db[o]   = sum_i dy[i,o]
// dx may be nullptr (no input gradient wanted); db may be nullptr (no bias). dw is required.
template <typename T>
void linear_backward(const LinearShape& shape, const T* x, const T* w, const T* dy, T* dx, T* dw, T* db);

}  // namespace engine::cpu
