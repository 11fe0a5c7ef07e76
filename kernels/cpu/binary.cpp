#include "kernels/cpu/binary.h"

namespace engine::cpu {

template <typename T>
void binary_forward(BinaryOp op, const BroadcastAxes& g, const T* a, const T* b, T* y) {
  for (std::int64_t i = 0; i < g.numel; ++i) {
    std::int64_t at = 0;
    const T v = binary_element<double>(op, g, i, a, b, &at);
    y[at] = v;
  }
}

template <typename T>
void binary_backward(BinaryOp op, const BroadcastGrad& g, const T* dy, const T* a, const T* b, T* dx) {
  for (std::int64_t k = 0; k < g.kept.numel; ++k) {
    std::int64_t at = 0;
    const double sum = binary_grad_element<double>(op, g, k, dy, a, b, &at);
    dx[at] = static_cast<T>(sum);
  }
}

template void binary_forward<float>(BinaryOp, const BroadcastAxes&, const float*, const float*, float*);
template void binary_forward<double>(BinaryOp, const BroadcastAxes&, const double*, const double*, double*);
template void binary_backward<float>(BinaryOp, const BroadcastGrad&, const float*, const float*, const float*,
                                     float*);
template void binary_backward<double>(BinaryOp, const BroadcastGrad&, const double*, const double*,
                                      const double*, double*);

}  // namespace engine::cpu
