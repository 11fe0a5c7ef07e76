#include "kernels/cuda/binary.h"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/nvtx.h"

namespace engine::cuda {
namespace {

__global__ void binary_forward_kernel(BinaryOp op, BroadcastAxes g, const float* a, const float* b,
                                      float* y) {
  for (const std::int64_t i : detail::grid_stride(g.numel)) {
    std::int64_t o = 0, ia = 0, ib = 0;
    broadcast_offsets(g, i, &o, &ia, &ib);
    y[o] = binary_apply<float>(op, a[ia], b[ib]);
  }
}

__global__ void binary_backward_kernel(BinaryOp op, BroadcastGrad g, const float* dy, const float* a,
                                       const float* b, float* dx) {
  for (const std::int64_t k : detail::grid_stride(g.kept.numel)) {
    std::int64_t o = 0, ia = 0, ib = 0;
    broadcast_offsets(g.kept, k, &o, &ia, &ib);
    double sum = 0.0;
    for (std::int64_t r = 0; r < g.reduced.numel; ++r) {
      std::int64_t ro = 0, ra = 0, rb = 0;
      broadcast_offsets(g.reduced, r, &ro, &ra, &rb);
      sum = __dadd_rn(
          sum, static_cast<double>(binary_grad<float>(op, g.operand, dy[o + ro], a[ia + ra], b[ib + rb])));
    }
    dx[g.operand == 0 ? ia : ib] = static_cast<float>(sum);
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
