// Global average pooling: one warp per (n, c) plane for the forward (a plane is small: h*w = 64 in a CIFAR
// ResNet), elementwise for the backward. The plane sum is accumulated in double, as on the CPU, so the
// forward differs from the reference only by the order of the double additions (far below float
// resolution); the backward is float(double(dy) / (h*w)), bitwise the CPU's.
#include "kernels/cuda/avgpool.h"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/nvtx.h"

namespace engine::cuda {
namespace {

constexpr int kWarpsPerBlock = detail::kBlock / detail::kWarp;

__global__ void avgpool_forward_kernel(const float* x, float* y, std::int64_t planes, int plane_size) {
  const int lane = static_cast<int>(threadIdx.x) % detail::kWarp;
  for (const std::int64_t plane : detail::warp_grid_stride(planes)) {
    const float* xp = x + plane * plane_size;
    double sum = 0.0;
    for (int i = lane; i < plane_size; i += detail::kWarp) sum += static_cast<double>(xp[i]);
    sum = detail::warp_sum(sum);
    if (lane == 0) y[plane] = static_cast<float>(sum / static_cast<double>(plane_size));
  }
}

__global__ void avgpool_backward_kernel(const float* dy, float* dx, std::int64_t total, int plane_size) {
  for (const std::int64_t i : detail::grid_stride(total)) {
    dx[i] = static_cast<float>(static_cast<double>(dy[i / plane_size]) / static_cast<double>(plane_size));
  }
}

void check_args(const char* op, int n, int c, int h, int w) {
  ENGINE_CHECK(n > 0 && c > 0 && h > 0 && w > 0, "{}: sizes must be positive, got n={} c={} h={} w={}", op, n,
               c, h, w);
  detail::check_fits_int(static_cast<std::int64_t>(h) * w, "h*w", op);
}

}  // namespace

void global_avgpool_forward(cudaStream_t stream, int n, int c, int h, int w, const float* x, float* y) {
  ENGINE_NVTX_RANGE("global_avgpool_forward");
  check_args("global_avgpool_forward", n, c, h, w);
  ENGINE_CHECK(x != nullptr && y != nullptr, "global_avgpool_forward: null pointer");
  const std::int64_t planes = static_cast<std::int64_t>(n) * c;
  avgpool_forward_kernel<<<detail::grid_for(planes, kWarpsPerBlock), detail::kBlock, 0, stream>>>(
      x, y, planes, h * w);
  ENGINE_LAUNCH_CHECK();
}

void global_avgpool_backward(cudaStream_t stream, int n, int c, int h, int w, const float* dy, float* dx) {
  ENGINE_NVTX_RANGE("global_avgpool_backward");
  check_args("global_avgpool_backward", n, c, h, w);
  ENGINE_CHECK(dy != nullptr && dx != nullptr, "global_avgpool_backward: null pointer");
  const std::int64_t total = static_cast<std::int64_t>(n) * c * h * w;
  avgpool_backward_kernel<<<detail::grid_for(total), detail::kBlock, 0, stream>>>(dy, dx, total, h * w);
  ENGINE_LAUNCH_CHECK();
}

}  // namespace engine::cuda
