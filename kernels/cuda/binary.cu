#include "kernels/cuda/binary.h"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/nvtx.h"

namespace engine::cuda {
namespace {

__global__ void binary_forward_kernel(BinaryOp op, BroadcastAxes g, const float* a, const float* b,
                                      float* y) {
  for (const std::int64_t i : detail::grid_stride(g.numel)) {
    std::int64_t at = 0;
    const float v = binary_element<float>(op, g, i, a, b, &at);
    y[at] = v;
  }
}

__global__ void binary_backward_kernel(BinaryOp op, BroadcastGrad g, const float* dy, const float* a,
                                       const float* b, float* dx) {
  for (const std::int64_t k : detail::grid_stride(g.kept.numel)) {
    std::int64_t at = 0;
    const double sum = binary_grad_element<float>(op, g, k, dy, a, b, &at);
    dx[at] = static_cast<float>(sum);
  }
}

}  // namespace

void binary_forward(cudaStream_t stream, BinaryOp op, const BroadcastAxes& g, const float* a, const float* b,
                    float* y) {
  ENGINE_NVTX_RANGE("binary_forward");
  if (g.numel == 0) return;
  binary_forward_kernel<<<detail::grid_for(g.numel), detail::kBlock, 0, stream>>>(op, g, a, b, y);
  ENGINE_LAUNCH_CHECK();
}

void binary_backward(cudaStream_t stream, BinaryOp op, const BroadcastGrad& g, const float* dy,
                     const float* a, const float* b, float* dx) {
  ENGINE_NVTX_RANGE("binary_backward");
  if (g.kept.numel == 0) return;
  binary_backward_kernel<<<detail::grid_for(g.kept.numel), detail::kBlock, 0, stream>>>(op, g, dy, a, b, dx);
  ENGINE_LAUNCH_CHECK();
}

}  // namespace engine::cuda
