// Channel layer-norm kernels: a thread per pixel for the forward and dx, a block per channel for dgamma and
// dbeta.
#include "kernels/channel_layernorm_math.h"
#include "kernels/cuda/channel_layernorm.h"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/nvtx.h"

namespace engine::cuda {
namespace {

__device__ __forceinline__ std::int64_t pixel_base(std::int64_t p, std::int64_t channels,
                                                   std::int64_t inner) {
  return (p / inner) * channels * inner + p % inner;
}

__global__ void forward_kernel(const float* x, const float* gamma, const float* beta, float* y,
                               std::int64_t channels, std::int64_t inner, std::int64_t pixels, double eps) {
  for (const std::int64_t p : detail::grid_stride(pixels)) {
    const std::int64_t base = pixel_base(p, channels, inner);
    pixel_layernorm_forward(x + base, gamma, beta, y + base, channels, inner, eps);
  }
}

__global__ void input_grad_kernel(const float* x, const float* gamma, const float* dy, float* dx,
                                  double* moments, std::int64_t channels, std::int64_t inner,
                                  std::int64_t pixels, double eps) {
  for (const std::int64_t p : detail::grid_stride(pixels)) {
    const std::int64_t base = pixel_base(p, channels, inner);
    const PixelMoments m = pixel_layernorm_backward(
        x + base, gamma, dy + base, dx != nullptr ? dx + base : nullptr, channels, inner, eps);
    moments[2 * p] = m.mean;
    moments[2 * p + 1] = m.rstd;
  }
}

// Block c sums channel c over the pixels: thread t takes pixels t, t + blockDim, ... in order, then the
// block's fixed-order reduction.
__global__ void param_grad_kernel(const float* x, const float* dy, const double* moments, float* dgamma,
                                  float* dbeta, std::int64_t channels, std::int64_t inner,
                                  std::int64_t pixels) {
  __shared__ double shared[32];
  const std::int64_t c = blockIdx.x;
  double sum_dyx = 0.0, sum_dy = 0.0;
  for (std::int64_t p = threadIdx.x; p < pixels; p += blockDim.x) {
    const std::int64_t k = pixel_base(p, channels, inner) + c * inner;
    const double d = static_cast<double>(dy[k]);
    sum_dyx += d * (static_cast<double>(x[k]) - moments[2 * p]) * moments[2 * p + 1];
    sum_dy += d;
  }
  const double total_dyx = detail::block_sum(sum_dyx, shared);
  const double total_dy = detail::block_sum(sum_dy, shared);
  if (threadIdx.x == 0) {
    if (dgamma != nullptr) dgamma[c] = static_cast<float>(total_dyx);
    if (dbeta != nullptr) dbeta[c] = static_cast<float>(total_dy);
  }
}

}  // namespace

void channel_layernorm_forward(cudaStream_t stream, const ChannelAffineShape& s, double eps, const float* x,
                               const float* gamma, const float* beta, float* y) {
  ENGINE_NVTX_RANGE("channel_layernorm_forward");
  s.validate();
  ENGINE_CHECK(x != nullptr && y != nullptr, "channel_layernorm_forward: null x or y");
  const std::int64_t pixels = s.outer * s.inner;
  forward_kernel<<<detail::grid_for(pixels), detail::kBlock, 0, stream>>>(x, gamma, beta, y, s.channels,
                                                                          s.inner, pixels, eps);
  ENGINE_LAUNCH_CHECK();
}

void channel_layernorm_backward(cudaStream_t stream, const ChannelAffineShape& s, double eps, const float* x,
                                const float* gamma, const float* dy, float* dx, float* dgamma, float* dbeta) {
  ENGINE_NVTX_RANGE("channel_layernorm_backward");
  s.validate();
  ENGINE_CHECK(x != nullptr && dy != nullptr, "channel_layernorm_backward: null x or dy");
  detail::check_fits_int(s.channels, "channels", "channel_layernorm_backward");
  const std::int64_t pixels = s.outer * s.inner;
  const Tensor moments = detail::scratch<double>(2 * pixels, stream);
  input_grad_kernel<<<detail::grid_for(pixels), detail::kBlock, 0, stream>>>(
      x, gamma, dy, dx, moments.data<double>(), s.channels, s.inner, pixels, eps);
  ENGINE_LAUNCH_CHECK();
  if (dgamma != nullptr || dbeta != nullptr) {
    param_grad_kernel<<<static_cast<unsigned>(s.channels), detail::kBlock, 0, stream>>>(
        x, dy, moments.data<double>(), dgamma, dbeta, s.channels, s.inner, pixels);
    ENGINE_LAUNCH_CHECK();
  }
}

}  // namespace engine::cuda
