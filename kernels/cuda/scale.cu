// Scale kernel: kernels/elementwise_math.h's Scale through launch_map (kernels/cuda/elementwise.cuh): the
// double product rounded once, as kernels/cpu/scale.cpp and kernels/cpu_fast/scale.cpp.
#include <cmath>

#include "kernels/cuda/elementwise.cuh"
#include "kernels/cuda/nvtx.h"
#include "kernels/cuda/scale.h"
#include "kernels/elementwise_math.h"

namespace engine::cuda {
void scale(cudaStream_t stream, const float* x, double a, float* y, std::int64_t n) {
  ENGINE_NVTX_RANGE("scale");
  ENGINE_CHECK(std::isfinite(a), "scale: the factor must be finite, got {}", a);
  detail::launch_map("scale", stream, elementwise::Scale{a}, x, y, n);
}

}  // namespace engine::cuda
