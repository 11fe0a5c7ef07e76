#include "kernels/cpu_fast/binary.h"

#include "kernels/cpu_fast/parallel.h"

namespace engine::cpu_fast {

void binary_forward(BinaryOp op, const BroadcastAxes& g, const float* a, const float* b, float* y) {
#pragma omp parallel for if (g.numel >= kParallelMinElements) schedule(static)
  for (std::int64_t i = 0; i < g.numel; ++i) {
    std::int64_t o = 0, ia = 0, ib = 0;
    broadcast_offsets(g, i, &o, &ia, &ib);
    y[o] = binary_apply<float>(op, a[ia], b[ib]);
  }
}

void binary_backward(BinaryOp op, const BroadcastGrad& g, const float* dy, const float* a, const float* b,
                     float* dx) {
  const std::int64_t work = g.kept.numel * g.reduced.numel;
#pragma omp parallel for if (work >= kParallelMinElements) schedule(static)
  for (std::int64_t k = 0; k < g.kept.numel; ++k) {
    std::int64_t o = 0, ia = 0, ib = 0;
    broadcast_offsets(g.kept, k, &o, &ia, &ib);
    double sum = 0.0;
    for (std::int64_t r = 0; r < g.reduced.numel; ++r) {
      std::int64_t ro = 0, ra = 0, rb = 0;
      broadcast_offsets(g.reduced, r, &ro, &ra, &rb);
      sum += static_cast<double>(binary_grad<float>(op, g.operand, dy[o + ro], a[ia + ra], b[ib + rb]));
    }
    dx[g.operand == 0 ? ia : ib] = static_cast<float>(sum);
  }
}

}  // namespace engine::cpu_fast
