#include "kernels/cuda/common.cuh"
#include "kernels/cuda/ema.h"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/nvtx.h"

namespace engine::cuda {
namespace {

__global__ void ema_kernel(double w, float* __restrict__ ema, float* __restrict__ x, std::int64_t n,
                           bool copy_back) {
  for (const std::int64_t i : detail::grid_stride(n)) {
    const double e = static_cast<double>(ema[i]);
    const float out = static_cast<float>(__dadd_rn(e, __dmul_rn(w, __dsub_rn(static_cast<double>(x[i]), e))));
    ema[i] = out;
    if (copy_back) x[i] = out;
  }
}

}  // namespace

void ema_update(cudaStream_t stream, double rho, float* ema, float* x, std::int64_t n, bool copy_back) {
  ENGINE_NVTX_RANGE("ema_update");
  ENGINE_CHECK(rho >= 0.0 && rho <= 1.0, "ema_update: decay {} must be in [0, 1]", rho);
  ENGINE_CHECK(n >= 0, "ema_update: element count must be non-negative, got {}", n);
  if (n == 0) return;
  ENGINE_CHECK(ema != nullptr && x != nullptr, "ema_update: null buffer");
  ema_kernel<<<detail::grid_for(n), detail::kBlock, 0, stream>>>(1.0 - rho, ema, x, n, copy_back);
  ENGINE_LAUNCH_CHECK();
}

}  // namespace engine::cuda
