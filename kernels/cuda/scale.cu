// Scale kernel: elementwise (kernels/cuda/elementwise.cuh); the double product rounded once, as
// kernels/cpu/scale.cpp.
#include <cmath>

#include "kernels/cuda/elementwise.cuh"
#include "kernels/cuda/nvtx.h"
#include "kernels/cuda/scale.h"

namespace engine::cuda {
namespace {

struct Scale {
  double a;
  __device__ float operator()(float v) const { return __double2float_rn(__dmul_rn(a, v)); }
};

}  // namespace

void scale(cudaStream_t stream, const float* x, double a, float* y, std::int64_t n) {
  ENGINE_NVTX_RANGE("scale");
  ENGINE_CHECK(std::isfinite(a), "scale: the factor must be finite, got {}", a);
  detail::launch_map("scale", stream, Scale{a}, x, y, n);
}

}  // namespace engine::cuda
