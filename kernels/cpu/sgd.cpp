#include "kernels/cpu/sgd.h"

#include <cmath>

#include "core/error.h"

namespace engine::cpu {

void SgdOptions::validate() const {
  // Positive range tests, so NaN fails them too.
  ENGINE_CHECK(lr >= 0.0, "sgd: learning rate must be >= 0, got {}", lr);
  ENGINE_CHECK(momentum >= 0.0, "sgd: momentum must be >= 0, got {}", momentum);
  ENGINE_CHECK(weight_decay >= 0.0, "sgd: weight_decay must be >= 0, got {}", weight_decay);
  ENGINE_CHECK(!std::isnan(dampening), "sgd: dampening must be a number, got {}", dampening);
  ENGINE_CHECK(
      !nesterov || (momentum > 0.0 && dampening == 0.0),
      "sgd: nesterov momentum requires momentum > 0 and dampening == 0, got momentum={} dampening={}",
      momentum, dampening);
}

template <typename T>
void sgd_step(const SgdOptions& o, T* params, const T* grads, T* momentum_buffer, std::int64_t n,
              bool first_step) {
  o.validate();
  ENGINE_CHECK(n >= 0, "sgd_step: parameter count must be non-negative, got {}", n);
  const bool use_momentum = o.momentum != 0.0;
  ENGINE_CHECK(!use_momentum || momentum_buffer != nullptr || n == 0,
               "sgd_step: momentum={} needs a momentum buffer, got null", o.momentum);
  for (std::int64_t i = 0; i < n; ++i) {
    const double p = static_cast<double>(params[i]);
    double g = static_cast<double>(grads[i]) + o.weight_decay * p;
    if (use_momentum) {
      const double buf =
          first_step ? g : o.momentum * static_cast<double>(momentum_buffer[i]) + (1.0 - o.dampening) * g;
      momentum_buffer[i] = static_cast<T>(buf);
      g = o.nesterov ? g + o.momentum * buf : buf;
    }
    params[i] = static_cast<T>(p - o.lr * g);
  }
}

template void sgd_step<float>(const SgdOptions&, float*, const float*, float*, std::int64_t, bool);
template void sgd_step<double>(const SgdOptions&, double*, const double*, double*, std::int64_t, bool);

}  // namespace engine::cpu
