#pragma once
// The elementwise passes of batch normalization over NHWC data (internal; batchnorm2d.cu's NHWC path): the
// arithmetic of normalize_kernel and grad_input_kernel (batchnorm_parts.cuh) exactly, walking memory in
// order; the channel of flat index i is i % C (32-bit: the launchers check that N*C*H*W fits in int), the
// walk is launch.h's 64-bit grid_stride. And the layout dispatch of the reduction and both passes, for
// BatchNorm2d and SyncBatchNorm2d.
// Storage float32 or bf16 (T = __nv_bfloat16 in device code), loaded to float and stored once, as there.

#include "core/layout.h"
#include "kernels/cuda/batchnorm_parts.cuh"
#include "kernels/cuda/channel_reduce_nhwc.cuh"

namespace engine::cuda::detail {
namespace {  // NOLINT(cert-dcl59-cpp,google-build-namespaces): kernels private to each including .cu file

// The channel of flat index i < total <= INT_MAX: a 32-bit modulo. The walk itself is grid_stride's 64-bit
// range: an int index would overflow when total is within one grid step (up to 2^24) of INT_MAX.
__device__ __forceinline__ int nhwc_channel(std::int64_t i, int c_count) {
  return static_cast<int>(static_cast<std::uint32_t>(i) % static_cast<std::uint32_t>(c_count));
}

template <bool kRelu, typename T>
__global__ void normalize_nhwc_kernel(const T* x, const float* coef, const float* beta, T* y, int c_count,
                                      int total) {
  for (const std::int64_t i : grid_stride(total)) {
    const int c = nhwc_channel(i, c_count);
    const float b = beta != nullptr ? beta[c] : 0.0f;
    const float v = fmaf((to_float(x[i]) - coef[3 * c]) - coef[3 * c + 1], coef[3 * c + 2], b);
    y[i] = from_float<T>(kRelu ? relu(v) : v);
  }
}

template <typename T>
void launch_normalize_nhwc(cudaStream_t stream, const BatchNorm2dShape& s, const T* x, const float* coef,
                           const float* beta, T* y, bool relu) {
  const int total = static_cast<int>(s.x_size());
  if (relu) {
    normalize_nhwc_kernel<true><<<grid_for(total), kBlock, 0, stream>>>(x, coef, beta, y, s.c, total);
  } else {
    normalize_nhwc_kernel<false><<<grid_for(total), kBlock, 0, stream>>>(x, coef, beta, y, s.c, total);
  }
  ENGINE_LAUNCH_CHECK();
}

template <typename T>
__global__ void grad_input_nhwc_kernel(const T* x, const T* dy, const T* relu_y, const float* coef, T* dx,
                                       int c_count, int total) {
  for (const std::int64_t i : grid_stride(total)) {
    const float* k = coef + 5 * nhwc_channel(i, c_count);
    const float xhat = (to_float(x[i]) - k[0]) * k[1];
    dx[i] = from_float<T>(k[2] * (masked_dy(dy, relu_y, i) - k[3] - xhat * k[4]));
  }
}

// relu_y is not deduced (callers pass nullptr for "no fused ReLU").
template <typename T>
void launch_grad_input_nhwc(cudaStream_t stream, const BatchNorm2dShape& s, const T* x, const T* dy,
                            const std::type_identity_t<T>* relu_y, const float* coef, T* dx) {
  const int total = static_cast<int>(s.x_size());
  grad_input_nhwc_kernel<<<grid_for(total), kBlock, 0, stream>>>(x, dy, relu_y, coef, dx, s.c, total);
  ENGINE_LAUNCH_CHECK();
}

// x[c * shift_stride_of(...)] is x[0, c, 0, 0], the channel's first value (the shift K of the statistics):
// H*W in NCHW, 1 in NHWC.
inline int shift_stride_of(Layout layout, const BatchNorm2dShape& s) {
  return layout == Layout::NHWC ? 1 : s.h * s.w;
}

// The per-channel reduction and the elementwise passes in the walk of `layout` (BatchNorm2d and
// SyncBatchNorm2d pick them here): the arithmetic is the same in both layouts.
template <typename Op, typename Finish>
void channel_reduce_in_layout(cudaStream_t stream, Layout layout, const BatchNorm2dShape& s, const Op& op,
                              const Finish& finish, const char* what) {
  if (layout == Layout::NHWC) {
    launch_channel_reduce_nhwc<2>(stream, static_cast<std::int64_t>(s.count()), s.c, op, finish, what);
  } else {
    launch_channel_reduce<2>(stream, s.n, s.c, s.h * s.w,
                             channel_chunks(static_cast<std::int64_t>(s.count())), op, finish, what);
  }
}

template <typename T>
void normalize_in_layout(cudaStream_t stream, Layout layout, const BatchNorm2dShape& s, const T* x,
                         const float* coef, const float* beta, T* y, bool relu) {
  if (layout == Layout::NHWC) {
    launch_normalize_nhwc(stream, s, x, coef, beta, y, relu);
  } else {
    launch_normalize(stream, s, x, coef, beta, y, relu);
  }
}

// relu_y: null for "no fused ReLU".
template <typename T>
void grad_input_in_layout(cudaStream_t stream, Layout layout, const BatchNorm2dShape& s, const T* x,
                          const T* dy, const std::type_identity_t<T>* relu_y, const float* coef, T* dx) {
  if (layout == Layout::NHWC) {
    launch_grad_input_nhwc(stream, s, x, dy, relu_y, coef, dx);
  } else {
    launch_grad_input(stream, s, x, dy, relu_y, coef, dx);
  }
}

}  // namespace
}  // namespace engine::cuda::detail
