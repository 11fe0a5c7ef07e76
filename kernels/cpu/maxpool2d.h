#pragma once
// 2-D max pooling over NCHW, the CPU reference.
//
// Output size (floor mode, as PyTorch's default): p = floor((h + 2*pad_h - kernel_h) / stride_h) + 1, and
// the same for q along w. Padding counts as -inf, so a padded cell never wins. As in PyTorch, padding is at
// most half the kernel, which also guarantees that every window holds at least one real input cell.
//
// Forward returns, for every output, the argmax: the flat index ih * w + iw into its (n, c) input plane,
// as int32. Backward sends each output's gradient to that ONE cell; cells shared by overlapping windows
// (stride < kernel) receive the sum.
//
// Tie rule: the FIRST maximum in row-major scan order of the window (rows top to bottom, columns left to
// right) wins, because a later cell replaces the running max only when strictly greater. NaN wins over
// any number and a later NaN replaces an earlier one. This is exactly the comparison PyTorch's CPU and
// CUDA kernels make (`val > maxval || isnan(val)`), so argmax indices match theirs. A window of all -inf
// reports its first real cell.
//
// Backward OVERWRITES dx (it zeroes dx, then scatters); it never accumulates into the caller's dx.

#include <cstdint>

#include "kernels/shapes.h"

namespace engine::cpu {

// x: [n, c, h, w]; y and argmax: [n, c, p, q].
template <typename T>
void maxpool2d_forward(const Pool2dShape& s, const T* x, T* y, std::int32_t* argmax);

// dy and argmax: [n, c, p, q]; dx: [n, c, h, w], overwritten. dx[plane, argmax] += dy, summed in double.
template <typename T>
void maxpool2d_backward(const Pool2dShape& s, const T* dy, const std::int32_t* argmax, T* dx);

}  // namespace engine::cpu
