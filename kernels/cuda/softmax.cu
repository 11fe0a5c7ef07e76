// Softmax row kernels: one warp per row (rows handed out by warp_grid_stride), lanes striding the row; the
// per-element steps are kernels/softmax_math.h's, the reductions the warp's butterfly.
#include <cmath>

#include "kernels/cpu/softmax.h"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/nvtx.h"
#include "kernels/cuda/softmax.h"
#include "kernels/softmax_math.h"

namespace engine::cuda {
namespace {

constexpr int kWarpsPerBlock = detail::kBlock / detail::kWarp;

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int offset = detail::kWarp / 2; offset > 0; offset /= 2)
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// Each row is read by one whole warp (the row index is uniform within it), so the shuffles see all lanes.
__global__ void softmax_forward_kernel(const float* x, float* y, std::int64_t rows, int k) {
  const elementwise::Softmax f;
  const int lane = static_cast<int>(threadIdx.x) % detail::kWarp;
  for (const std::int64_t r : detail::warp_grid_stride(rows)) {
    const float* xr = x + r * k;
    float* yr = y + r * k;
    float m = -INFINITY;
    for (int j = lane; j < k; j += detail::kWarp) m = fmaxf(m, xr[j]);  // skips NaN; the sum keeps it
    m = warp_max(m);
    float s = 0.0f;
    for (int j = lane; j < k; j += detail::kWarp) s += f.shifted_exp(xr[j], m);
    const float inv = f.inverse(detail::warp_sum(s));
    // e_j again rather than parked in y: y may alias x, and the same lane computes the same value.
    for (int j = lane; j < k; j += detail::kWarp) yr[j] = f(f.shifted_exp(xr[j], m), inv);
  }
}

__global__ void softmax_backward_kernel(const float* y, const float* dy, float* dx, std::int64_t rows,
                                        int k) {
  const elementwise::Softmax f;
  const int lane = static_cast<int>(threadIdx.x) % detail::kWarp;
  for (const std::int64_t r : detail::warp_grid_stride(rows)) {
    const float* yr = y + r * k;
    const float* dyr = dy + r * k;
    float d = 0.0f;
    for (int j = lane; j < k; j += detail::kWarp) d += dyr[j] * yr[j];
    d = detail::warp_sum(d);
    for (int j = lane; j < k; j += detail::kWarp) dx[r * k + j] = f.grad(yr[j], dyr[j], d);
  }
}

void check_sizes(const char* op, std::int64_t rows, std::int64_t k) {
  cpu::check_softmax_sizes(op, rows, k);
  detail::check_fits_int(k, "row length", op);
}

}  // namespace

void softmax_forward(cudaStream_t stream, const float* x, float* y, std::int64_t rows, std::int64_t k) {
  ENGINE_NVTX_RANGE("softmax_forward");
  check_sizes("softmax_forward", rows, k);
  if (rows == 0) return;
  softmax_forward_kernel<<<detail::grid_for(rows, kWarpsPerBlock), detail::kBlock, 0, stream>>>(
      x, y, rows, static_cast<int>(k));
  ENGINE_LAUNCH_CHECK();
}

void softmax_backward(cudaStream_t stream, const float* y, const float* dy, float* dx, std::int64_t rows,
                      std::int64_t k) {
  ENGINE_NVTX_RANGE("softmax_backward");
  check_sizes("softmax_backward", rows, k);
  if (rows == 0) return;
  softmax_backward_kernel<<<detail::grid_for(rows, kWarpsPerBlock), detail::kBlock, 0, stream>>>(
      y, dy, dx, rows, static_cast<int>(k));
  ENGINE_LAUNCH_CHECK();
}

}  // namespace engine::cuda
