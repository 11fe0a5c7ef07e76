// Global average pooling: one warp per (n, c) plane for the forward (a plane is small: h*w = 64 in a CIFAR
// ResNet), elementwise for the backward. The plane sum is accumulated in double, as on the CPU, so the
// forward differs from the reference only by the order of the double additions (far below float
// resolution); the backward is float(double(dy) / (h*w)), bitwise the CPU's. Storage float32 or bf16 (bf16
// autocast: T = __nv_bfloat16, loaded to float, the float result rounded once at the store).
#include "kernels/cuda/avgpool.h"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/nvtx.h"
#include "kernels/cuda/vector4.cuh"

namespace engine::cuda {
namespace {

constexpr int kWarpsPerBlock = detail::kBlock / detail::kWarp;

template <typename T>
__global__ void avgpool_forward_kernel(const T* x, T* y, std::int64_t planes, int plane_size) {
  const int lane = static_cast<int>(threadIdx.x) % detail::kWarp;
  for (const std::int64_t plane : detail::warp_grid_stride(planes)) {
    const T* xp = x + plane * plane_size;
    double sum = 0.0;
    for (int i = lane; i < plane_size; i += detail::kWarp)
      sum += static_cast<double>(detail::to_float(xp[i]));
    sum = detail::warp_sum(sum);
    if (lane == 0)
      y[plane] = detail::from_float<T>(static_cast<float>(sum / static_cast<double>(plane_size)));
  }
}

template <typename T>
__global__ void avgpool_backward_kernel(const T* dy, T* dx, std::int64_t total, int plane_size) {
  for (const std::int64_t i : detail::grid_stride(total)) {
    const double g = static_cast<double>(detail::to_float(dy[i / plane_size]));
    dx[i] = detail::from_float<T>(static_cast<float>(g / static_cast<double>(plane_size)));
  }
}

// NHWC: thread (n, c) sums x[n, :, :, c] (stride C: consecutive threads read consecutive channels) in
// increasing cell order, in double.
template <typename T>
__global__ void avgpool_forward_nhwc_kernel(const T* x, T* y, std::int64_t outputs, int c_count,
                                            int plane_size) {
  for (const std::int64_t o : detail::grid_stride(outputs)) {
    const std::int64_t n = o / c_count;
    const int c = static_cast<int>(o % c_count);
    const T* xp = x + n * plane_size * c_count + c;
    double sum = 0.0;
    for (int i = 0; i < plane_size; ++i)
      sum += static_cast<double>(detail::to_float(xp[static_cast<std::int64_t>(i) * c_count]));
    y[o] = detail::from_float<T>(static_cast<float>(sum / static_cast<double>(plane_size)));
  }
}

template <typename T>
__global__ void avgpool_backward_nhwc_kernel(const T* dy, T* dx, std::int64_t total, int c_count,
                                             int plane_size) {
  for (const std::int64_t i : detail::grid_stride(total)) {
    const std::int64_t n = i / (static_cast<std::int64_t>(plane_size) * c_count);
    const std::int64_t o = n * c_count + i % c_count;
    dx[i] = detail::from_float<T>(
        static_cast<float>(static_cast<double>(detail::to_float(dy[o])) / static_cast<double>(plane_size)));
  }
}

void check_args(const char* op, int n, int c, int h, int w) {
  ENGINE_CHECK(n > 0 && c > 0 && h > 0 && w > 0, "{}: sizes must be positive, got n={} c={} h={} w={}", op, n,
               c, h, w);
  detail::check_fits_int(static_cast<std::int64_t>(h) * w, "h*w", op);
}

template <typename T>
void forward(cudaStream_t stream, int n, int c, int h, int w, const T* x, T* y, Layout layout) {
  check_args("global_avgpool_forward", n, c, h, w);
  ENGINE_CHECK(x != nullptr && y != nullptr, "global_avgpool_forward: null pointer");
  const std::int64_t planes = static_cast<std::int64_t>(n) * c;
  if (layout == Layout::NHWC) {
    avgpool_forward_nhwc_kernel<<<detail::grid_for(planes), detail::kBlock, 0, stream>>>(
        detail::device_ptr(x), detail::device_ptr(y), planes, c, h * w);
  } else {
    avgpool_forward_kernel<<<detail::grid_for(planes, kWarpsPerBlock), detail::kBlock, 0, stream>>>(
        detail::device_ptr(x), detail::device_ptr(y), planes, h * w);
  }
  ENGINE_LAUNCH_CHECK();
}

template <typename T>
void backward(cudaStream_t stream, int n, int c, int h, int w, const T* dy, T* dx, Layout layout) {
  check_args("global_avgpool_backward", n, c, h, w);
  ENGINE_CHECK(dy != nullptr && dx != nullptr, "global_avgpool_backward: null pointer");
  const std::int64_t total = static_cast<std::int64_t>(n) * c * h * w;
  if (layout == Layout::NHWC) {
    avgpool_backward_nhwc_kernel<<<detail::grid_for(total), detail::kBlock, 0, stream>>>(
        detail::device_ptr(dy), detail::device_ptr(dx), total, c, h * w);
  } else {
    avgpool_backward_kernel<<<detail::grid_for(total), detail::kBlock, 0, stream>>>(
        detail::device_ptr(dy), detail::device_ptr(dx), total, h * w);
  }
  ENGINE_LAUNCH_CHECK();
}

}  // namespace

void global_avgpool_forward(cudaStream_t stream, int n, int c, int h, int w, const float* x, float* y,
                            Layout layout) {
  ENGINE_NVTX_RANGE("global_avgpool_forward");
  forward(stream, n, c, h, w, x, y, layout);
}

void global_avgpool_backward(cudaStream_t stream, int n, int c, int h, int w, const float* dy, float* dx,
                             Layout layout) {
  ENGINE_NVTX_RANGE("global_avgpool_backward");
  backward(stream, n, c, h, w, dy, dx, layout);
}

void global_avgpool_forward(cudaStream_t stream, int n, int c, int h, int w, const bfloat16* x, bfloat16* y,
                            Layout layout) {
  ENGINE_NVTX_RANGE("global_avgpool_forward_bf16");
  forward(stream, n, c, h, w, x, y, layout);
}

void global_avgpool_backward(cudaStream_t stream, int n, int c, int h, int w, const bfloat16* dy,
                             bfloat16* dx, Layout layout) {
  ENGINE_NVTX_RANGE("global_avgpool_backward_bf16");
  backward(stream, n, c, h, w, dy, dx, layout);
}

}  // namespace engine::cuda
