// Per-channel scale and shift kernels: elementwise passes over [outer, channels, inner] and one block per
// channel for the parameter gradients.
#include "kernels/cuda/channel_affine.h"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/nvtx.h"

namespace engine::cuda {
namespace {

__global__ void forward_kernel(const float* x, const float* scale, const float* shift, float* y,
                               std::int64_t channels, std::int64_t inner, std::int64_t total) {
  for (const std::int64_t i : detail::grid_stride(total)) {
    const std::int64_t c = (i / inner) % channels;
    const double a = scale != nullptr ? static_cast<double>(scale[c]) : 1.0;
    const double b = shift != nullptr ? static_cast<double>(shift[c]) : 0.0;
    y[i] = __double2float_rn(__dadd_rn(__dmul_rn(static_cast<double>(x[i]), a), b));
  }
}

__global__ void input_grad_kernel(const float* scale, const float* dy, float* dx, std::int64_t channels,
                                  std::int64_t inner, std::int64_t total) {
  for (const std::int64_t i : detail::grid_stride(total)) {
    const double a = scale != nullptr ? static_cast<double>(scale[(i / inner) % channels]) : 1.0;
    dx[i] = __double2float_rn(__dmul_rn(static_cast<double>(dy[i]), a));
  }
}

// Block c sums channel c's outer * inner cells: thread t takes cells t, t + blockDim, ... in order, then the
// block's fixed-order reduction.
__global__ void param_grad_kernel(const float* x, const float* dy, float* dscale, float* dshift,
                                  std::int64_t outer, std::int64_t channels, std::int64_t inner) {
  __shared__ double shared[32];
  const std::int64_t c = blockIdx.x;
  const std::int64_t cells = outer * inner;
  double sum_dyx = 0.0, sum_dy = 0.0;
  for (std::int64_t k = threadIdx.x; k < cells; k += blockDim.x) {
    const std::int64_t i = ((k / inner) * channels + c) * inner + k % inner;
    const double g = static_cast<double>(dy[i]);
    if (dscale != nullptr) sum_dyx += g * static_cast<double>(x[i]);
    sum_dy += g;
  }
  if (dscale != nullptr) {
    const double total = detail::block_sum(sum_dyx, shared);
    if (threadIdx.x == 0) dscale[c] = static_cast<float>(total);
  }
  if (dshift != nullptr) {
    const double total = detail::block_sum(sum_dy, shared);
    if (threadIdx.x == 0) dshift[c] = static_cast<float>(total);
  }
}

}  // namespace

void channel_affine_forward(cudaStream_t stream, const ChannelAffineShape& s, const float* x,
                            const float* scale, const float* shift, float* y) {
  ENGINE_NVTX_RANGE("channel_affine_forward");
  s.validate();
  ENGINE_CHECK(x != nullptr && y != nullptr, "channel_affine_forward: null x or y");
  const std::int64_t total = s.numel();
  forward_kernel<<<detail::grid_for(total), detail::kBlock, 0, stream>>>(x, scale, shift, y, s.channels,
                                                                         s.inner, total);
  ENGINE_LAUNCH_CHECK();
}

void channel_affine_backward(cudaStream_t stream, const ChannelAffineShape& s, const float* x,
                             const float* scale, const float* dy, float* dx, float* dscale, float* dshift) {
  ENGINE_NVTX_RANGE("channel_affine_backward");
  s.validate();
  ENGINE_CHECK(dy != nullptr, "channel_affine_backward: null dy");
  ENGINE_CHECK(dscale == nullptr || x != nullptr, "channel_affine_backward: the scale's gradient needs x");
  detail::check_fits_int(s.channels, "channels", "channel_affine_backward");
  const std::int64_t total = s.numel();
  if (dx != nullptr) {
    input_grad_kernel<<<detail::grid_for(total), detail::kBlock, 0, stream>>>(scale, dy, dx, s.channels,
                                                                              s.inner, total);
    ENGINE_LAUNCH_CHECK();
  }
  if (dscale != nullptr || dshift != nullptr) {
    param_grad_kernel<<<static_cast<unsigned>(s.channels), detail::kBlock, 0, stream>>>(
        x, dy, dscale, dshift, s.outer, s.channels, s.inner);
    ENGINE_LAUNCH_CHECK();
  }
}

}  // namespace engine::cuda
