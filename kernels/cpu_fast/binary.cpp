#include "kernels/cpu_fast/binary.h"

#include "kernels/cpu_fast/parallel.h"

namespace engine::cpu_fast {

void binary_forward(BinaryOp op, const BroadcastAxes& g, const float* a, const float* b, float* y) {
#pragma omp parallel for if (g.numel >= kParallelMinElements) schedule(static)
  for (std::int64_t i = 0; i < g.numel; ++i) {
    std::int64_t at = 0;
    const float v = binary_element<float>(op, g, i, a, b, &at);
    y[at] = v;
  }
}

void binary_backward(BinaryOp op, const BroadcastGrad& g, const float* dy, const float* a, const float* b,
                     float* dx) {
  const std::int64_t work = g.kept.numel * g.reduced.numel;
#pragma omp parallel for if (work >= kParallelMinElements) schedule(static)
  for (std::int64_t k = 0; k < g.kept.numel; ++k) {
    std::int64_t at = 0;
    const double sum = binary_grad_element<float>(op, g, k, dy, a, b, &at);
    dx[at] = static_cast<float>(sum);
  }
}

}  // namespace engine::cpu_fast
