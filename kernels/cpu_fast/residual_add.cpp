#include "kernels/cpu_fast/residual_add.h"

#include "kernels/cpu_fast/map.h"

namespace engine::cpu_fast {

void residual_add_forward(const float* a, const float* b, float* y, std::int64_t n) {
  map("residual_add_forward", elementwise::Sum{}, a, b, y, n);
}

void residual_add_forward(const bfloat16* a, const bfloat16* b, bfloat16* y, std::int64_t n) {
  map("residual_add_forward", elementwise::Sum{}, a, b, y, n);
}

}  // namespace engine::cpu_fast
