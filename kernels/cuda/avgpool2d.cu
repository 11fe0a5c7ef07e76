// Average pooling. Forward: one thread per output, the window's real cells summed in row-major order in
// double and divided as the CPU does, so values are bitwise the CPU's. Backward: a gather. The thread of
// input cell (ih, iw) visits the windows that hold it in increasing (op, oq) order and adds dy / divisor in
// double: the CPU's scatter adds the same quotients to that cell in the same order, so dx is bitwise the
// CPU's too, with no atomics. Storage float32 or bf16 (T = __nv_bfloat16: widened to float, rounded once at
// the store). Layout NCHW or NHWC: the kernels differ only in where a plane's cells live
// (kernels/cuda/pool_plane.cuh).
#include "kernels/cuda/avgpool2d.h"
#include "kernels/cuda/common.cuh"
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

// AvgPool2dShape::divisor on the device: the window inside the padded input, or its real cells.
__device__ __forceinline__ double divisor(const PoolGeom& g, bool count_include_pad, int op, int oq) {
  const int h0 = op * g.sh - g.ph, w0 = oq * g.sw - g.pw;
  if (count_include_pad)
    return static_cast<double>((min(h0 + g.kh, g.h + g.ph) - h0) * (min(w0 + g.kw, g.w + g.pw) - w0));
  const int rows = min(h0 + g.kh, g.h) - max(h0, 0), cols = min(w0 + g.kw, g.w) - max(w0, 0);
  return static_cast<double>(rows * cols);
}

template <Layout L, typename T>
__global__ void avgpool_forward_kernel(PoolGeom g, bool count_include_pad, const T* x, T* y,
                                       std::int64_t total) {
  for (const std::int64_t o : detail::grid_stride(total)) {
    const PlaneCell at = plane_cell<L>(o, g.c, g.p * g.q, g.h * g.w);
    const int oq = at.cell % g.q, op = at.cell / g.q;
    const T* xp = x + at.other_base;
    const int h0 = max(op * g.sh - g.ph, 0), h1 = min(op * g.sh - g.ph + g.kh, g.h);
    const int w0 = max(oq * g.sw - g.pw, 0), w1 = min(oq * g.sw - g.pw + g.kw, g.w);
    double sum = 0.0;
    for (int ih = h0; ih < h1; ++ih) {
      for (int iw = w0; iw < w1; ++iw)
        sum +=
            static_cast<double>(detail::to_float(xp[static_cast<std::int64_t>(ih * g.w + iw) * at.stride]));
    }
    y[o] = detail::from_float<T>(static_cast<float>(sum / divisor(g, count_include_pad, op, oq)));
  }
}

template <Layout L, typename T>
__global__ void avgpool_backward_kernel(PoolGeom g, bool count_include_pad, const T* dy, T* dx,
                                        std::int64_t total) {
  for (const std::int64_t idx : detail::grid_stride(total)) {
    const PlaneCell at = plane_cell<L>(idx, g.c, g.h * g.w, g.p * g.q);
    const int iw = at.cell % g.w, ih = at.cell / g.w;
    const int op0 = first_window(ih, g.sh, g.ph, g.kh), op1 = min((ih + g.ph) / g.sh, g.p - 1);
    const int oq0 = first_window(iw, g.sw, g.pw, g.kw), oq1 = min((iw + g.pw) / g.sw, g.q - 1);
    double acc = 0.0;
    for (int op = op0; op <= op1; ++op) {
      for (int oq = oq0; oq <= oq1; ++oq) {
        const std::int64_t o = at.other_base + static_cast<std::int64_t>(op * g.q + oq) * at.stride;
        acc += static_cast<double>(detail::to_float(dy[o])) / divisor(g, count_include_pad, op, oq);
      }
    }
    dx[idx] = detail::from_float<T>(static_cast<float>(acc));
  }
}

template <typename T>
void forward(cudaStream_t stream, const AvgPool2dShape& shape, const T* x, T* y, Layout layout) {
  shape.validate();
  ENGINE_CHECK(x != nullptr && y != nullptr, "avgpool2d_forward: null pointer");
  const std::int64_t total = shape.output_size();
  const auto grid = detail::grid_for(total);
  const PoolGeom g = geom_of(shape.window);
  if (layout == Layout::NHWC) {
    avgpool_forward_kernel<Layout::NHWC><<<grid, detail::kBlock, 0, stream>>>(
        g, shape.count_include_pad, detail::device_ptr(x), detail::device_ptr(y), total);
  } else {
    avgpool_forward_kernel<Layout::NCHW><<<grid, detail::kBlock, 0, stream>>>(
        g, shape.count_include_pad, detail::device_ptr(x), detail::device_ptr(y), total);
  }
  ENGINE_LAUNCH_CHECK();
}

template <typename T>
void backward(cudaStream_t stream, const AvgPool2dShape& shape, const T* dy, T* dx, Layout layout) {
  shape.validate();
  ENGINE_CHECK(dy != nullptr && dx != nullptr, "avgpool2d_backward: null pointer");
  const std::int64_t total = shape.input_size();
  const auto grid = detail::grid_for(total);
  const PoolGeom g = geom_of(shape.window);
  if (layout == Layout::NHWC) {
    avgpool_backward_kernel<Layout::NHWC><<<grid, detail::kBlock, 0, stream>>>(
        g, shape.count_include_pad, detail::device_ptr(dy), detail::device_ptr(dx), total);
  } else {
    avgpool_backward_kernel<Layout::NCHW><<<grid, detail::kBlock, 0, stream>>>(
        g, shape.count_include_pad, detail::device_ptr(dy), detail::device_ptr(dx), total);
  }
  ENGINE_LAUNCH_CHECK();
}

}  // namespace

void avgpool2d_forward(cudaStream_t stream, const AvgPool2dShape& shape, const float* x, float* y,
                       Layout layout) {
  ENGINE_NVTX_RANGE("avgpool2d_forward");
  forward(stream, shape, x, y, layout);
}

void avgpool2d_backward(cudaStream_t stream, const AvgPool2dShape& shape, const float* dy, float* dx,
                        Layout layout) {
  ENGINE_NVTX_RANGE("avgpool2d_backward");
  backward(stream, shape, dy, dx, layout);
}

void avgpool2d_forward(cudaStream_t stream, const AvgPool2dShape& shape, const bfloat16* x, bfloat16* y,
                       Layout layout) {
  ENGINE_NVTX_RANGE("avgpool2d_forward_bf16");
  forward(stream, shape, x, y, layout);
}

void avgpool2d_backward(cudaStream_t stream, const AvgPool2dShape& shape, const bfloat16* dy, bfloat16* dx,
                        Layout layout) {
  ENGINE_NVTX_RANGE("avgpool2d_backward_bf16");
  backward(stream, shape, dy, dx, layout);
}

}  // namespace engine::cuda
