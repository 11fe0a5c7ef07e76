#include "kernels/cpu_fast/gelu.h"

#include "kernels/cpu_fast/map.h"

namespace engine::cpu_fast {

void gelu_forward(const float* x, float* y, std::int64_t n) {
  map("gelu_forward", elementwise::Gelu{}, x, y, n);
}

void gelu_backward(const float* x, const float* dy, float* dx, std::int64_t n) {
  map("gelu_backward", elementwise::Gelu{}, x, dy, dx, n);
}

}  // namespace engine::cpu_fast
