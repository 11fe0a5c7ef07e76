#include "kernels/cpu_fast/sgd.h"

#include "core/error.h"
#include "kernels/cpu_fast/parallel.h"

namespace engine::cpu_fast {

void sgd_step(const cpu::SgdOptions& o, float* params, const float* grads, float* momentum_buffer,
              std::int64_t n, bool first_step) {
  o.validate();
  ENGINE_CHECK(n >= 0, "sgd_step: parameter count must be non-negative, got {}", n);
  const bool use_momentum = o.momentum != 0.0;
  ENGINE_CHECK(!use_momentum || momentum_buffer != nullptr || n == 0,
               "sgd_step: momentum={} needs a momentum buffer, got null", o.momentum);
  const float lr = static_cast<float>(o.lr), wd = static_cast<float>(o.weight_decay);
  const float mom = static_cast<float>(o.momentum), keep = static_cast<float>(1.0 - o.dampening);
  if (!use_momentum) {
#pragma omp parallel for simd if (n >= kParallelMinElements) schedule(static)
    for (std::int64_t i = 0; i < n; ++i) params[i] -= lr * (grads[i] + wd * params[i]);
    return;
  }
  // The three momentum cases as separate loops, so each vectorises without a branch per element.
  if (first_step) {
#pragma omp parallel for simd if (n >= kParallelMinElements) schedule(static)
    for (std::int64_t i = 0; i < n; ++i) {
      const float g = grads[i] + wd * params[i];
      momentum_buffer[i] = g;
      params[i] -= lr * (o.nesterov ? g + mom * g : g);
    }
  } else {
#pragma omp parallel for simd if (n >= kParallelMinElements) schedule(static)
    for (std::int64_t i = 0; i < n; ++i) {
      const float g = grads[i] + wd * params[i];
      const float buf = mom * momentum_buffer[i] + keep * g;
      momentum_buffer[i] = buf;
      params[i] -= lr * (o.nesterov ? g + mom * buf : buf);
    }
  }
}

}  // namespace engine::cpu_fast
