#pragma once
// 2-D convolution (cross-correlation, as PyTorch's Conv2d), float64-accumulating CPU reference: the oracle
// every GPU convolution is tested against, and the CPU device's implementation. Plain loops, written to be
// read, not to be fast.
//
// Layouts, all contiguous, row-major:
//   x  [N, C, H, W]   input
//   w  [K, C/G, R, S] weight (PyTorch's layout: output channel first; G = groups)
//   b  [K]            optional bias
//   y  [N, K, P, Q]   output, P = (H + 2*pad_h - dilation_h*(R-1) - 1) / stride_h + 1, Q likewise
// Padding is zero padding. Groups: output channel k reads the C/G input channels of its group
// (Conv2dShape); dilation spaces the kernel's taps.
//
// Every sum is accumulated in double whatever the storage type T (float or double), and rounded to T once
// at the end, so the float version differs from the double one by the output rounding alone.

#include <array>
#include <cstddef>

#include "kernels/shapes.h"

namespace engine::cpu {

// The geometry of a convolution of x[x_dims] by w[w_dims]; throws engine::Error when the weight's input
// channels times groups differ from the input's, or when the result does not validate().
Conv2dShape conv2d_shape(const std::array<int, 4>& x_dims, const std::array<int, 4>& w_dims, int stride_h,
                         int stride_w, int pad_h, int pad_w, int groups = 1, int dilation_h = 1,
                         int dilation_w = 1);

// y[n,k,p,q] = b[k] + sum_{c<C/G,r,s} w[k,c,r,s] * x[n, g*C/G + c, p*stride_h - pad_h + r*dilation_h,
// q*stride_w - pad_w + s*dilation_w] with g = k / (K/G), terms that fall in the padding counting as zero.
// bias may be nullptr (no bias).
template <typename T>
void conv2d_forward(const Conv2dShape& shape, const T* x, const T* w, const T* bias, T* y);

// Given dy = dL/dy [N, K, P, Q], OVERWRITES (never accumulates into) the gradients (written for G = 1,
// dilation 1; with groups, k runs over c's group and x's channel is offset as in the forward):
//   dx[n,c,i,j] = sum of dy[n,k,p,q] * w[k,c,r,s] over every (k,p,q,r,s) with
//                 p*stride_h - pad_h + r*dil_h = i and q*stride_w - pad_w + s*dil_w = j  (a transposed conv)
//   dw[k,c,r,s] = sum_{n,p,q} dy[n,k,p,q] * x[n, c, p*stride_h - pad_h + r*dil_h, q*stride_w - pad_w +
//   s*dil_w] db[k]       = sum_{n,p,q} dy[n,k,p,q]
// dx may be nullptr (the first layer needs no input gradient); db may be nullptr (no bias). dw is required.
template <typename T>
void conv2d_backward(const Conv2dShape& shape, const T* x, const T* w, const T* dy, T* dx, T* dw, T* db);

}  // namespace engine::cpu
