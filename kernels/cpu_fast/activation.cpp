#include "kernels/cpu_fast/activation.h"

#include "kernels/cpu_fast/map.h"

namespace engine::cpu_fast {

void activation_forward(const ActivationParams& p, const float* x, float* y, std::int64_t n) {
  elementwise::visit_activation(p, [&](auto f) { map("activation_forward", f, x, y, n); });
}

void activation_backward(const ActivationParams& p, const float* saved, const float* dy, float* dx,
                         std::int64_t n) {
  elementwise::visit_activation(p, [&](auto f) { map("activation_backward", f, saved, dy, dx, n); });
}

}  // namespace engine::cpu_fast
