#pragma once
// The geometry the pooling kernels share (maxpool2d.cu, avgpool2d.cu): the window sizes by value, where a
// plane's cells live in either layout, and which output windows hold an input cell (the backward gathers).
#include <cstdint>

#include "core/layout.h"
#include "kernels/shapes.h"

namespace engine::cuda::detail {

struct PoolGeom {
  int c, h, w, p, q, kh, kw, sh, sw, ph, pw;
};

inline PoolGeom geom_of(const Pool2dShape& s) {
  return {s.c, s.h, s.w, s.p(), s.q(), s.kernel_h, s.kernel_w, s.stride_h, s.stride_w, s.pad_h, s.pad_w};
}

// Element i of a tensor whose (n, c) planes have `cells` cells, seen as (its cell in the plane, and where
// cell k of the same (n, c) plane lives in a tensor with `other_cells` cells per plane: base + k * stride).
// NCHW: planes are contiguous (stride 1). NHWC: ((n * cells + cell) * C + c), so consecutive threads read
// consecutive channels (stride C).
struct PlaneCell {
  int cell;
  std::int64_t other_base;
  int stride;
};

template <Layout L>
__device__ __forceinline__ PlaneCell plane_cell(std::int64_t i, int c_count, int cells, int other_cells) {
  if constexpr (L == Layout::NCHW) {
    const std::int64_t plane = i / cells;  // n * C + c
    return {static_cast<int>(i % cells), plane * other_cells, 1};
  } else {
    const int c = static_cast<int>(i % c_count);
    const std::int64_t image_cell = i / c_count;  // n * cells + cell
    const std::int64_t n = image_cell / cells;
    return {static_cast<int>(image_cell % cells), n * other_cells * c_count + c, c_count};
  }
}

// Smallest output index o with o*stride - pad + kernel > i, i.e. the first window reaching cell i.
__device__ __forceinline__ int first_window(int i, int stride, int pad, int kernel) {
  const int t = i + pad - kernel + 1;  // need o*stride >= t
  return t <= 0 ? 0 : (t + stride - 1) / stride;
}

}  // namespace engine::cuda::detail
