// Max pooling. Forward: one thread per output, the window scanned in row-major order with the CPU's
// comparison (`v > best || isnan(v)`), so values and argmax indices are bitwise the CPU's.
// Backward: a gather. The thread of input cell (ih, iw) visits the output windows that contain it -- rows
// op with op*stride_h - pad_h <= ih < op*stride_h - pad_h + kernel_h, likewise columns -- in increasing
// (op, oq) order, and adds dy where the window's argmax is this cell. Same terms in the same order as the
// CPU's scatter (which walks outputs in increasing order), summed in double as there: bitwise equal, no
// atomics, deterministic, and every dx cell written.
// Storage float32 or bf16 (bf16 autocast: T = __nv_bfloat16): compared and summed as floats / doubles, the
// results stored once, so a bf16 run gives the bits of the float kernel on the widened input, rounded.
// Layout NCHW or NHWC: one kernel per direction, which differs only in where a plane's cells live
// (PlaneCell below); the windows, scan order and argmax (the cell ih * w + iw of the (n, c) plane) are the
// same, so both layouts give the same values and indices, each stored at its layout's position.
#include <cmath>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/maxpool2d.h"
#include "kernels/cuda/nvtx.h"
#include "kernels/cuda/pool_plane.cuh"
#include "kernels/cuda/vector4.cuh"

namespace engine::cuda {
namespace {

using detail::first_window;
using detail::geom_of;
using detail::plane_cell;
using detail::PlaneCell;
using detail::PoolGeom;

template <Layout L, typename T>
__global__ void maxpool_forward_kernel(PoolGeom g, const T* x, T* y, std::int32_t* argmax,
                                       std::int64_t total) {
  for (const std::int64_t o : detail::grid_stride(total)) {
    const PlaneCell at = plane_cell<L>(o, g.c, g.p * g.q, g.h * g.w);
    const int oq = at.cell % g.q, op = at.cell / g.q;
    const T* xp = x + at.other_base;
    const int h0 = max(op * g.sh - g.ph, 0), h1 = min(op * g.sh - g.ph + g.kh, g.h);
    const int w0 = max(oq * g.sw - g.pw, 0), w1 = min(oq * g.sw - g.pw + g.kw, g.w);
    float best = -INFINITY;
    int best_index = h0 * g.w + w0;
    for (int ih = h0; ih < h1; ++ih) {
      for (int iw = w0; iw < w1; ++iw) {
        const float v = detail::to_float(xp[static_cast<std::int64_t>(ih * g.w + iw) * at.stride]);
        if (v > best || isnan(v)) {  // strict '>': the first maximum in scan order wins a tie
          best = v;
          best_index = ih * g.w + iw;
        }
      }
    }
    y[o] = detail::from_float<T>(best);
    argmax[o] = best_index;
  }
}

template <Layout L, typename T>
__global__ void maxpool_backward_kernel(PoolGeom g, const T* dy, const std::int32_t* argmax, T* dx,
                                        std::int64_t total) {
  for (const std::int64_t idx : detail::grid_stride(total)) {
    const PlaneCell at = plane_cell<L>(idx, g.c, g.h * g.w, g.p * g.q);
    const int iw = at.cell % g.w, ih = at.cell / g.w;
    // Windows containing row ih: op in [first_window, (ih + pad) / stride], clipped to [0, p).
    const int op0 = first_window(ih, g.sh, g.ph, g.kh), op1 = min((ih + g.ph) / g.sh, g.p - 1);
    const int oq0 = first_window(iw, g.sw, g.pw, g.kw), oq1 = min((iw + g.pw) / g.sw, g.q - 1);
    double acc = 0.0;
    for (int op = op0; op <= op1; ++op) {
      for (int oq = oq0; oq <= oq1; ++oq) {
        const std::int64_t o = at.other_base + static_cast<std::int64_t>(op * g.q + oq) * at.stride;
        if (argmax[o] == at.cell) acc += static_cast<double>(detail::to_float(dy[o]));
      }
    }
    dx[idx] = detail::from_float<T>(static_cast<float>(acc));
  }
}

template <typename T>
void forward(cudaStream_t stream, const Pool2dShape& shape, const T* x, T* y, std::int32_t* argmax,
             Layout layout) {
  shape.validate();
  ENGINE_CHECK(x != nullptr && y != nullptr && argmax != nullptr, "maxpool2d_forward: null pointer");
  const std::int64_t total = shape.output_size();
  const auto grid = detail::grid_for(total);
  if (layout == Layout::NHWC) {
    maxpool_forward_kernel<Layout::NHWC><<<grid, detail::kBlock, 0, stream>>>(
        geom_of(shape), detail::device_ptr(x), detail::device_ptr(y), argmax, total);
  } else {
    maxpool_forward_kernel<Layout::NCHW><<<grid, detail::kBlock, 0, stream>>>(
        geom_of(shape), detail::device_ptr(x), detail::device_ptr(y), argmax, total);
  }
  ENGINE_LAUNCH_CHECK();
}

template <typename T>
void backward(cudaStream_t stream, const Pool2dShape& shape, const T* dy, const std::int32_t* argmax, T* dx,
              Layout layout) {
  shape.validate();
  ENGINE_CHECK(dy != nullptr && argmax != nullptr && dx != nullptr, "maxpool2d_backward: null pointer");
  const std::int64_t total = shape.input_size();
  const auto grid = detail::grid_for(total);
  if (layout == Layout::NHWC) {
    maxpool_backward_kernel<Layout::NHWC><<<grid, detail::kBlock, 0, stream>>>(
        geom_of(shape), detail::device_ptr(dy), argmax, detail::device_ptr(dx), total);
  } else {
    maxpool_backward_kernel<Layout::NCHW><<<grid, detail::kBlock, 0, stream>>>(
        geom_of(shape), detail::device_ptr(dy), argmax, detail::device_ptr(dx), total);
  }
  ENGINE_LAUNCH_CHECK();
}

}  // namespace

void maxpool2d_forward(cudaStream_t stream, const Pool2dShape& shape, const float* x, float* y,
                       std::int32_t* argmax, Layout layout) {
  ENGINE_NVTX_RANGE("maxpool2d_forward");
  forward(stream, shape, x, y, argmax, layout);
}

void maxpool2d_backward(cudaStream_t stream, const Pool2dShape& shape, const float* dy,
                        const std::int32_t* argmax, float* dx, Layout layout) {
  ENGINE_NVTX_RANGE("maxpool2d_backward");
  backward(stream, shape, dy, argmax, dx, layout);
}

void maxpool2d_forward(cudaStream_t stream, const Pool2dShape& shape, const bfloat16* x, bfloat16* y,
                       std::int32_t* argmax, Layout layout) {
  ENGINE_NVTX_RANGE("maxpool2d_forward_bf16");
  forward(stream, shape, x, y, argmax, layout);
}

void maxpool2d_backward(cudaStream_t stream, const Pool2dShape& shape, const bfloat16* dy,
                        const std::int32_t* argmax, bfloat16* dx, Layout layout) {
  ENGINE_NVTX_RANGE("maxpool2d_backward_bf16");
  backward(stream, shape, dy, argmax, dx, layout);
}

}  // namespace engine::cuda
