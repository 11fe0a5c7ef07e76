#pragma once
// The pieces of batch normalization shared by BatchNorm2d (batchnorm2d.cu) and SyncBatchNorm's device path
// (sync_batchnorm.cu), internal to kernels/cuda: the per-element terms of the two per-channel reductions
// (ShiftedSums for the statistics, GradSums for the backward sums; summed by channel_reduce.cuh) and the two
// elementwise passes (normalize, dx) that read per-channel coefficients prepared in double. batchnorm2d.h
// explains the arithmetic. Each .cu file that includes this gets its own copies (anonymous namespace).

#include "kernels/cuda/channel_reduce.cuh"

namespace engine::cuda::detail {
namespace {  // NOLINT(cert-dcl59-cpp,google-build-namespaces): kernels private to each including .cu file

// S1 = sum (x - K), S2 = sum (x - K)^2 with K = x[0, c, 0, 0], the channel's first value.
struct ShiftedSums {
  const float* x;
  int hw;
  __device__ void operator()(std::int64_t offset, int c, double* acc) const {
    const double shift = static_cast<double>(x[static_cast<std::int64_t>(c) * hw]);  // x[0, c, 0, 0]
    const double d = static_cast<double>(x[offset]) - shift;
    acc[0] += d;
    acc[1] += d * d;
  }
};

// y = ((x - shift) - (mean - shift)) * scale + beta, with coef = [shift, mean - shift, scale] per channel.
// Subtracting the mean in two steps keeps float accuracy when |mean| >> std: x - shift is exact there
// (Sterbenz: both are data values of the same size), and mean - shift is small, so rounding it to float
// costs nothing next to the data's spread. (x - mean_as_float would lose up to half an ulp of the mean.)
__global__ void normalize_kernel(const float* x, const float* coef, const float* beta, float* y, int c_count,
                                 int hw, std::int64_t total) {
  for (const std::int64_t i : detail::grid_stride(total)) {
    const int c = static_cast<int>((i / hw) % c_count);
    const float* k = coef + static_cast<std::int64_t>(c) * 3;
    const float b = beta != nullptr ? beta[c] : 0.0f;
    y[i] = fmaf((x[i] - k[0]) - k[1], k[2], b);
  }
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

struct GradSums {
  const float* x;
  const float* dy;
  const double* mean;
  const double* invstd;
  __device__ void operator()(std::int64_t offset, int c, double* acc) const {
    const double d = static_cast<double>(dy[offset]);
    const double xhat = (static_cast<double>(x[offset]) - mean[c]) * invstd[c];
    acc[0] += d;
    acc[1] += d * xhat;
  }
};

// dx = scale * (dy - mean_dy - xhat * mean_dy_xhat), xhat = (x - mean) * invstd, with coef = [mean, invstd,
// scale, mean_dy, mean_dy_xhat] per channel.
__global__ void grad_input_kernel(const float* x, const float* dy, const float* coef, float* dx, int c_count,
                                  int hw, std::int64_t total) {
  for (const std::int64_t i : detail::grid_stride(total)) {
    const float* k = coef + ((i / hw) % c_count) * 5;
    const float xhat = (x[i] - k[0]) * k[1];
    dx[i] = k[2] * (dy[i] - k[3] - xhat * k[4]);
  }
}

}  // namespace
}  // namespace engine::cuda::detail
