#pragma once
// The pieces of batch normalization shared by BatchNorm2d (batchnorm2d.cu) and SyncBatchNorm's device path
// (sync_batchnorm.cu), internal to kernels/cuda: the per-element terms of the two per-channel reductions
// (ShiftedSums for the statistics, GradSums for the backward sums; summed by channel_reduce.cuh) and the two
// elementwise passes (normalize, dx) that read per-channel coefficients prepared in double. batchnorm2d.h
// explains the arithmetic. Each .cu file that includes this gets its own copies (anonymous namespace).
//
// The elementwise passes walk planes (one (n, c) image channel of H*W values): grid.y strides over the N*C
// planes, grid.x over a plane's values, so the channel is known per plane (one 32-bit modulo per block
// row) and no element divides a 64-bit index. A fused ReLU rides along: normalize writes relu(y) (NaN
// propagates, as kernels/cpu/relu.h), and GradSums / grad_input read dy masked by the fused output > 0.
// Activations (x, y, dy, dx, the fused output) are float32 or bf16 (bf16 autocast: T = __nv_bfloat16,
// vector4.cuh): loaded to float, every statistic and coefficient float/double as for float32 data, each
// output rounded once at the store. Parameters and statistics stay float32.

#include <type_traits>

#include "kernels/cuda/channel_reduce.cuh"
#include "kernels/cuda/vector4.cuh"
#include "kernels/shapes.h"

namespace engine::cuda::detail {
namespace {  // NOLINT(cert-dcl59-cpp,google-build-namespaces): kernels private to each including .cu file

// S1 = sum (x - K), S2 = sum (x - K)^2 with K = x[0, c, 0, 0], the channel's first value.
template <typename T>
struct ShiftedSumsOf {
  const T* x;
  int hw;
  __device__ void operator()(std::int64_t offset, int c, double* acc) const {
    const double shift =
        static_cast<double>(to_float(x[static_cast<std::int64_t>(c) * hw]));  // x[0, c, 0, 0]
    const double d = static_cast<double>(to_float(x[offset])) - shift;
    acc[0] += d;
    acc[1] += d * d;
  }
};
using ShiftedSums = ShiftedSumsOf<float>;

// The grid of a plane walk: x over a plane's hw values, y over the planes (capped; the kernels stride).
struct PlaneGrid {
  dim3 grid;
  int planes;
};
inline PlaneGrid plane_grid(int n, int c, int hw) {
  constexpr int kMaxPlaneBlocks = 65535;  // gridDim.y's limit
  const int planes = n * c;               // callers checked N*C*H*W fits in int
  const auto x = static_cast<unsigned>(std::clamp<std::int64_t>(ceil_div(hw, kBlock), 1, 1024));
  const auto y = static_cast<unsigned>(std::min(planes, kMaxPlaneBlocks));
  return {dim3(x, y), planes};
}

// The engine's ReLU: NaN propagates.
__device__ __forceinline__ float relu(float v) { return (v > 0.0f || v != v) ? v : 0.0f; }

// y = ((x - shift) - (mean - shift)) * scale + beta, with coef = [shift, mean - shift, scale] per channel;
// relu(y) when kRelu. Subtracting the mean in two steps keeps float accuracy when |mean| >> std: x - shift is
// exact there (Sterbenz: both are data values of the same size), and mean - shift is small, so rounding it
// to float costs nothing next to the data's spread. (x - mean_as_float would lose up to half an ulp of the
// mean.)
template <bool kRelu, typename T>
__global__ void normalize_kernel(const T* x, const float* coef, const float* beta, T* y, int c_count, int hw,
                                 int planes) {
  for (int plane = static_cast<int>(blockIdx.y); plane < planes; plane += static_cast<int>(gridDim.y)) {
    const int c = plane % c_count;
    const float shift = coef[3 * c], centre = coef[3 * c + 1], scale = coef[3 * c + 2];
    const float b = beta != nullptr ? beta[c] : 0.0f;
    const std::int64_t base = static_cast<std::int64_t>(plane) * hw;
    for (int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x); i < hw;
         i += static_cast<int>(gridDim.x * blockDim.x)) {
      const float v = fmaf((to_float(x[base + i]) - shift) - centre, scale, b);
      y[base + i] = from_float<T>(kRelu ? relu(v) : v);
    }
  }
}

template <typename T>
void launch_normalize(cudaStream_t stream, const BatchNorm2dShape& s, const T* x, const float* coef,
                      const float* beta, T* y, bool relu) {
  const PlaneGrid g = plane_grid(s.n, s.c, s.h * s.w);
  if (relu) {
    normalize_kernel<true><<<g.grid, kBlock, 0, stream>>>(x, coef, beta, y, s.c, s.h * s.w, g.planes);
  } else {
    normalize_kernel<false><<<g.grid, kBlock, 0, stream>>>(x, coef, beta, y, s.c, s.h * s.w, g.planes);
  }
  ENGINE_LAUNCH_CHECK();
}

// ---- backward ----

// mean and invstd per channel in double: from the saved batch statistics (training) or the running ones.
__global__ void backward_stats_kernel(const float* mean_in, const float* invstd_in, const float* running_var,
                                      double eps, int c_count, double* mean, double* invstd) {
  const int c = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (c >= c_count) return;
  mean[c] = static_cast<double>(mean_in[c]);
  invstd[c] = invstd_in != nullptr ? static_cast<double>(invstd_in[c])
                                   : 1.0 / sqrt(static_cast<double>(running_var[c]) + eps);
}

// dy as BatchNorm's backward sees it: masked by the fused ReLU's output (relu_y > 0) when there is one.
template <typename T>
__device__ __forceinline__ float masked_dy(const T* dy, const T* relu_y, std::int64_t i) {
  return (relu_y == nullptr || to_float(relu_y[i]) > 0.0f) ? to_float(dy[i]) : 0.0f;
}

// sum dy, sum dy * xhat (dy masked by relu_y when fused; relu_y null otherwise).
template <typename T>
struct GradSumsOf {
  const T* x;
  const T* dy;
  const double* mean;
  const double* invstd;
  const T* relu_y = nullptr;
  __device__ void operator()(std::int64_t offset, int c, double* acc) const {
    const double d = static_cast<double>(masked_dy(dy, relu_y, offset));
    const double xhat = (static_cast<double>(to_float(x[offset])) - mean[c]) * invstd[c];
    acc[0] += d;
    acc[1] += d * xhat;
  }
};
using GradSums = GradSumsOf<float>;

// dx = scale * (dy - mean_dy - xhat * mean_dy_xhat), xhat = (x - mean) * invstd, with coef = [mean, invstd,
// scale, mean_dy, mean_dy_xhat] per channel; dy masked by relu_y when not null.
template <typename T>
__global__ void grad_input_kernel(const T* x, const T* dy, const T* relu_y, const float* coef, T* dx,
                                  int c_count, int hw, int planes) {
  for (int plane = static_cast<int>(blockIdx.y); plane < planes; plane += static_cast<int>(gridDim.y)) {
    const float* k = coef + 5 * (plane % c_count);
    const float mean = k[0], invstd = k[1], scale = k[2], mean_dy = k[3], mean_dy_xhat = k[4];
    const std::int64_t base = static_cast<std::int64_t>(plane) * hw;
    for (int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x); i < hw;
         i += static_cast<int>(gridDim.x * blockDim.x)) {
      const float xhat = (to_float(x[base + i]) - mean) * invstd;
      dx[base + i] = from_float<T>(scale * (masked_dy(dy, relu_y, base + i) - mean_dy - xhat * mean_dy_xhat));
    }
  }
}

// relu_y is not deduced (callers pass nullptr for "no fused ReLU").
template <typename T>
void launch_grad_input(cudaStream_t stream, const BatchNorm2dShape& s, const T* x, const T* dy,
                       const std::type_identity_t<T>* relu_y, const float* coef, T* dx) {
  const PlaneGrid g = plane_grid(s.n, s.c, s.h * s.w);
  grad_input_kernel<<<g.grid, kBlock, 0, stream>>>(x, dy, relu_y, coef, dx, s.c, s.h * s.w, g.planes);
  ENGINE_LAUNCH_CHECK();
}

}  // namespace
}  // namespace engine::cuda::detail
