#include "kernels/cpu_fast/relu.h"

#include "kernels/cpu_fast/map.h"

namespace engine::cpu_fast {

void relu_forward(const float* x, float* y, std::int64_t n) {
  map("relu_forward", elementwise::Relu{}, x, y, n);
}

void relu_backward(const float* x, const float* dy, float* dx, std::int64_t n) {
  map("relu_backward", elementwise::Relu{}, x, dy, dx, n);
}

void relu_forward(const bfloat16* x, bfloat16* y, std::int64_t n) {
  map("relu_forward", elementwise::Relu{}, x, y, n);
}

void relu_backward(const bfloat16* x, const bfloat16* dy, bfloat16* dx, std::int64_t n) {
  map("relu_backward", elementwise::Relu{}, x, dy, dx, n);
}

}  // namespace engine::cpu_fast
