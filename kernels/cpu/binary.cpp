#include "kernels/cpu/binary.h"

namespace engine::cpu {

template <typename T>
void binary_forward(BinaryOp op, const BroadcastAxes& g, const T* a, const T* b, T* y) {
  for (std::int64_t i = 0; i < g.numel; ++i) {
    std::int64_t o = 0, ia = 0, ib = 0;
    broadcast_offsets(g, i, &o, &ia, &ib);
    y[o] = static_cast<T>(binary_apply<double>(op, static_cast<double>(a[ia]), static_cast<double>(b[ib])));
  }
}

template <typename T>
void binary_backward(BinaryOp op, const BroadcastGrad& g, const T* dy, const T* a, const T* b, T* dx) {
  for (std::int64_t k = 0; k < g.kept.numel; ++k) {
    std::int64_t o = 0, ia = 0, ib = 0;
    broadcast_offsets(g.kept, k, &o, &ia, &ib);
    double sum = 0.0;
    for (std::int64_t r = 0; r < g.reduced.numel; ++r) {
      std::int64_t ro = 0, ra = 0, rb = 0;
      broadcast_offsets(g.reduced, r, &ro, &ra, &rb);
      sum += binary_grad<double>(op, g.operand, static_cast<double>(dy[o + ro]),
                                 static_cast<double>(a[ia + ra]), static_cast<double>(b[ib + rb]));
    }
    dx[g.operand == 0 ? ia : ib] = static_cast<T>(sum);
  }
}

template void binary_forward<float>(BinaryOp, const BroadcastAxes&, const float*, const float*, float*);
template void binary_forward<double>(BinaryOp, const BroadcastAxes&, const double*, const double*, double*);
template void binary_backward<float>(BinaryOp, const BroadcastGrad&, const float*, const float*, const float*,
                                     float*);
template void binary_backward<double>(BinaryOp, const BroadcastGrad&, const double*, const double*,
                                      const double*, double*);

}  // namespace engine::cpu
