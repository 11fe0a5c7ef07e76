// Scale kernel: elementwise, grid-stride; the double product rounded once, as kernels/cpu/scale.cpp. It
// scales small tensors (airbench's logits), so it has no 128-bit path.
#include <cmath>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/nvtx.h"
#include "kernels/cuda/scale.h"

namespace engine::cuda {
namespace {

__global__ void scale_kernel(const float* x, double a, float* y, std::int64_t n) {
  for (const std::int64_t i : detail::grid_stride(n)) y[i] = __double2float_rn(__dmul_rn(a, x[i]));
}

}  // namespace

void scale(cudaStream_t stream, const float* x, double a, float* y, std::int64_t n) {
  ENGINE_NVTX_RANGE("scale");
  ENGINE_CHECK(n >= 0, "scale: element count must be non-negative, got {}", n);
  ENGINE_CHECK(std::isfinite(a), "scale: the factor must be finite, got {}", a);
  if (n == 0) return;
  ENGINE_CHECK(x != nullptr && y != nullptr, "scale: null pointer");
  scale_kernel<<<detail::grid_for(n), detail::kBlock, 0, stream>>>(x, a, y, n);
  ENGINE_LAUNCH_CHECK();
}

}  // namespace engine::cuda
