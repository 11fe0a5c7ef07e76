#include "kernels/cpu_fast/relu.h"

#include "kernels/cpu_fast/map.h"

namespace engine::cpu_fast {

void relu_forward(const float* x, float* y, std::int64_t n) {
  map("relu_forward", elementwise::Relu{}, x, y, n);
}

void relu_backward(const float* x, const float* dy, float* dx, std::int64_t n) {
  map("relu_backward", elementwise::Relu{}, x, dy, dx, n);
}

}  // namespace engine::cpu_fast
