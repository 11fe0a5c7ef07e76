// Max pooling. Forward: one thread per output, the window scanned in row-major order with the CPU's
// comparison (`v > best || isnan(v)`), so values and argmax indices are bitwise the CPU's.
// Backward: a gather. The thread of input cell (ih, iw) visits the output windows that contain it -- rows
// op with op*stride_h - pad_h <= ih < op*stride_h - pad_h + kernel_h, likewise columns -- in increasing
// (op, oq) order, and adds dy where the window's argmax is this cell. Same terms in the same order as the
// CPU's scatter (which walks outputs in increasing order), summed in double as there: bitwise equal, no
// atomics, deterministic, and every dx cell written.
// Storage float32 or bf16 (bf16 autocast: T = __nv_bfloat16): compared and summed as floats / doubles, the
// results stored once, so a bf16 run gives the bits of the float kernel on the widened input, rounded.
#include <cmath>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/maxpool2d.h"
#include "kernels/cuda/nvtx.h"
#include "kernels/cuda/vector4.cuh"

namespace engine::cuda {
namespace {

struct PoolGeom {
  int h, w, p, q, kh, kw, sh, sw, ph, pw;
};

PoolGeom geom_of(const Pool2dShape& s) {
  return {s.h, s.w, s.p(), s.q(), s.kernel_h, s.kernel_w, s.stride_h, s.stride_w, s.pad_h, s.pad_w};
}

template <typename T>
__global__ void maxpool_forward_kernel(PoolGeom g, const T* x, T* y, std::int32_t* argmax,
                                       std::int64_t total) {
  for (const std::int64_t o : detail::grid_stride(total)) {
    const int oq = static_cast<int>(o % g.q);
    const int op = static_cast<int>((o / g.q) % g.p);
    const std::int64_t plane = o / (static_cast<std::int64_t>(g.p) * g.q);
    const T* xp = x + plane * g.h * g.w;
    const int h0 = max(op * g.sh - g.ph, 0), h1 = min(op * g.sh - g.ph + g.kh, g.h);
    const int w0 = max(oq * g.sw - g.pw, 0), w1 = min(oq * g.sw - g.pw + g.kw, g.w);
    float best = -INFINITY;
    int best_index = h0 * g.w + w0;
    for (int ih = h0; ih < h1; ++ih) {
      for (int iw = w0; iw < w1; ++iw) {
        const float v = detail::to_float(xp[ih * g.w + iw]);
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

// Smallest output index o with o*stride - pad + kernel > i, i.e. the first window reaching cell i.
__device__ __forceinline__ int first_window(int i, int stride, int pad, int kernel) {
  const int t = i + pad - kernel + 1;  // need o*stride >= t
  return t <= 0 ? 0 : (t + stride - 1) / stride;
}

template <typename T>
__global__ void maxpool_backward_kernel(PoolGeom g, const T* dy, const std::int32_t* argmax, T* dx,
                                        std::int64_t total) {
  for (const std::int64_t idx : detail::grid_stride(total)) {
    const int iw = static_cast<int>(idx % g.w);
    const int ih = static_cast<int>((idx / g.w) % g.h);
    const std::int64_t plane = idx / (static_cast<std::int64_t>(g.h) * g.w);
    const int cell = ih * g.w + iw;
    // Windows containing row ih: op in [first_window, (ih + pad) / stride], clipped to [0, p).
    const int op0 = first_window(ih, g.sh, g.ph, g.kh), op1 = min((ih + g.ph) / g.sh, g.p - 1);
    const int oq0 = first_window(iw, g.sw, g.pw, g.kw), oq1 = min((iw + g.pw) / g.sw, g.q - 1);
    const std::int64_t out_base = plane * g.p * g.q;
    double acc = 0.0;
    for (int op = op0; op <= op1; ++op) {
      for (int oq = oq0; oq <= oq1; ++oq) {
        const std::int64_t o = out_base + static_cast<std::int64_t>(op) * g.q + oq;
        if (argmax[o] == cell) acc += static_cast<double>(detail::to_float(dy[o]));
      }
    }
    dx[idx] = detail::from_float<T>(static_cast<float>(acc));
  }
}

template <typename T>
void forward(cudaStream_t stream, const Pool2dShape& shape, const T* x, T* y, std::int32_t* argmax) {
  shape.validate();
  ENGINE_CHECK(x != nullptr && y != nullptr && argmax != nullptr, "maxpool2d_forward: null pointer");
  const std::int64_t total = shape.output_size();
  maxpool_forward_kernel<<<detail::grid_for(total), detail::kBlock, 0, stream>>>(
      geom_of(shape), detail::device_ptr(x), detail::device_ptr(y), argmax, total);
  ENGINE_LAUNCH_CHECK();
}

template <typename T>
void backward(cudaStream_t stream, const Pool2dShape& shape, const T* dy, const std::int32_t* argmax, T* dx) {
  shape.validate();
  ENGINE_CHECK(dy != nullptr && argmax != nullptr && dx != nullptr, "maxpool2d_backward: null pointer");
  const std::int64_t total = shape.input_size();
  maxpool_backward_kernel<<<detail::grid_for(total), detail::kBlock, 0, stream>>>(
      geom_of(shape), detail::device_ptr(dy), argmax, detail::device_ptr(dx), total);
  ENGINE_LAUNCH_CHECK();
}

// NHWC (channels last): the same windows, scan order and argmax (the cell ih * w + iw of the (n, c) plane)
// as the kernels above, so values and indices are bitwise the NCHW ones; element (n, c, i, j) of a tensor
// with planes of P x Q cells lives at ((n * P + i) * Q + j) * C + c, so consecutive threads read
// consecutive channels.
__global__ void maxpool_forward_nhwc_kernel(PoolGeom g, int c_count, const float* x, float* y,
                                            std::int32_t* argmax, std::int64_t total) {
  for (const std::int64_t o : detail::grid_stride(total)) {
    const int c = static_cast<int>(o % c_count);
    const std::int64_t cell_out = o / c_count;  // (n * p + op) * q + oq
    const int oq = static_cast<int>(cell_out % g.q);
    const int op = static_cast<int>((cell_out / g.q) % g.p);
    const std::int64_t n = cell_out / (static_cast<std::int64_t>(g.p) * g.q);
    const float* xn = x + n * g.h * g.w * c_count + c;
    const int h0 = max(op * g.sh - g.ph, 0), h1 = min(op * g.sh - g.ph + g.kh, g.h);
    const int w0 = max(oq * g.sw - g.pw, 0), w1 = min(oq * g.sw - g.pw + g.kw, g.w);
    float best = -INFINITY;
    int best_index = h0 * g.w + w0;
    for (int ih = h0; ih < h1; ++ih) {
      for (int iw = w0; iw < w1; ++iw) {
        const float v = xn[static_cast<std::int64_t>(ih * g.w + iw) * c_count];
        if (v > best || isnan(v)) {
          best = v;
          best_index = ih * g.w + iw;
        }
      }
    }
    y[o] = best;
    argmax[o] = best_index;
  }
}

__global__ void maxpool_backward_nhwc_kernel(PoolGeom g, int c_count, const float* dy,
                                             const std::int32_t* argmax, float* dx, std::int64_t total) {
  for (const std::int64_t idx : detail::grid_stride(total)) {
    const int c = static_cast<int>(idx % c_count);
    const std::int64_t cell_in = idx / c_count;  // (n * h + ih) * w + iw
    const int iw = static_cast<int>(cell_in % g.w);
    const int ih = static_cast<int>((cell_in / g.w) % g.h);
    const std::int64_t n = cell_in / (static_cast<std::int64_t>(g.h) * g.w);
    const int cell = ih * g.w + iw;
    const int op0 = first_window(ih, g.sh, g.ph, g.kh), op1 = min((ih + g.ph) / g.sh, g.p - 1);
    const int oq0 = first_window(iw, g.sw, g.pw, g.kw), oq1 = min((iw + g.pw) / g.sw, g.q - 1);
    const std::int64_t out_base = n * g.p * g.q;
    double acc = 0.0;
    for (int op = op0; op <= op1; ++op) {
      for (int oq = oq0; oq <= oq1; ++oq) {
        const std::int64_t o = (out_base + static_cast<std::int64_t>(op) * g.q + oq) * c_count + c;
        if (argmax[o] == cell) acc += static_cast<double>(dy[o]);
      }
    }
    dx[idx] = static_cast<float>(acc);
  }
}

}  // namespace

void maxpool2d_forward_nhwc(cudaStream_t stream, const Pool2dShape& shape, const float* x, float* y,
                            std::int32_t* argmax) {
  ENGINE_NVTX_RANGE("maxpool2d_forward_nhwc");
  shape.validate();
  ENGINE_CHECK(x != nullptr && y != nullptr && argmax != nullptr, "maxpool2d_forward_nhwc: null pointer");
  const std::int64_t total = shape.output_size();
  maxpool_forward_nhwc_kernel<<<detail::grid_for(total), detail::kBlock, 0, stream>>>(geom_of(shape), shape.c,
                                                                                      x, y, argmax, total);
  ENGINE_LAUNCH_CHECK();
}

void maxpool2d_backward_nhwc(cudaStream_t stream, const Pool2dShape& shape, const float* dy,
                             const std::int32_t* argmax, float* dx) {
  ENGINE_NVTX_RANGE("maxpool2d_backward_nhwc");
  shape.validate();
  ENGINE_CHECK(dy != nullptr && argmax != nullptr && dx != nullptr, "maxpool2d_backward_nhwc: null pointer");
  const std::int64_t total = shape.input_size();
  maxpool_backward_nhwc_kernel<<<detail::grid_for(total), detail::kBlock, 0, stream>>>(
      geom_of(shape), shape.c, dy, argmax, dx, total);
  ENGINE_LAUNCH_CHECK();
}

void maxpool2d_forward(cudaStream_t stream, const Pool2dShape& shape, const float* x, float* y,
                       std::int32_t* argmax) {
  ENGINE_NVTX_RANGE("maxpool2d_forward");
  forward(stream, shape, x, y, argmax);
}

void maxpool2d_backward(cudaStream_t stream, const Pool2dShape& shape, const float* dy,
                        const std::int32_t* argmax, float* dx) {
  ENGINE_NVTX_RANGE("maxpool2d_backward");
  backward(stream, shape, dy, argmax, dx);
}

void maxpool2d_forward(cudaStream_t stream, const Pool2dShape& shape, const bfloat16* x, bfloat16* y,
                       std::int32_t* argmax) {
  ENGINE_NVTX_RANGE("maxpool2d_forward_bf16");
  forward(stream, shape, x, y, argmax);
}

void maxpool2d_backward(cudaStream_t stream, const Pool2dShape& shape, const bfloat16* dy,
                        const std::int32_t* argmax, bfloat16* dx) {
  ENGINE_NVTX_RANGE("maxpool2d_backward_bf16");
  backward(stream, shape, dy, argmax, dx);
}

}  // namespace engine::cuda
