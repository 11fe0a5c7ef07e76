#include "kernels/cpu/sgd.h"

#include <algorithm>
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

std::vector<SgdGroup> tile_sgd_groups(std::span<const SgdGroup> groups, double default_weight_decay,
                                      std::int64_t n) {
  std::vector<SgdGroup> tiles;
  std::int64_t at = 0;
  for (std::size_t k = 0; k < groups.size(); ++k) {
    const SgdGroup& g = groups[k];
    ENGINE_CHECK(g.begin >= at && g.end >= g.begin && g.end <= n,
                 "sgd: parameter group {} [{}, {}) is not sorted, disjoint and inside [0, {})", k, g.begin,
                 g.end, n);
    ENGINE_CHECK(std::isfinite(g.lr_scale) && g.lr_scale >= 0.0,
                 "sgd: parameter group {}: lr scale {} must be finite and >= 0", k, g.lr_scale);
    ENGINE_CHECK(std::isfinite(g.weight_decay) && g.weight_decay >= 0.0,
                 "sgd: parameter group {}: weight decay {} must be finite and >= 0", k, g.weight_decay);
    if (g.begin > at) tiles.push_back({at, g.begin, 1.0, default_weight_decay, false});
    if (g.end > g.begin) tiles.push_back(g);
    at = std::max(at, g.end);
  }
  if (n > at) tiles.push_back({at, n, 1.0, default_weight_decay, false});
  return tiles;
}

namespace {

template <typename T>
void sgd_range(const SgdOptions& o, double lr, double weight_decay, T* params, const T* grads,
               T* momentum_buffer, std::int64_t begin, std::int64_t end, bool first_step) {
  const bool use_momentum = o.momentum != 0.0;
  for (std::int64_t i = begin; i < end; ++i) {
    const double p = static_cast<double>(params[i]);
    double g = static_cast<double>(grads[i]) + weight_decay * p;
    if (use_momentum) {
      const double buf =
          first_step ? g : o.momentum * static_cast<double>(momentum_buffer[i]) + (1.0 - o.dampening) * g;
      momentum_buffer[i] = static_cast<T>(buf);
      g = o.nesterov ? g + o.momentum * buf : buf;
    }
    params[i] = static_cast<T>(p - lr * g);
  }
}

void check_step(const SgdOptions& o, const void* momentum_buffer, std::int64_t n) {
  o.validate();
  ENGINE_CHECK(n >= 0, "sgd_step: parameter count must be non-negative, got {}", n);
  ENGINE_CHECK(o.momentum == 0.0 || momentum_buffer != nullptr || n == 0,
               "sgd_step: momentum={} needs a momentum buffer, got null", o.momentum);
}

}  // namespace

template <typename T>
void sgd_step(const SgdOptions& o, T* params, const T* grads, T* momentum_buffer, std::int64_t n,
              bool first_step) {
  check_step(o, momentum_buffer, n);
  sgd_range(o, o.lr, o.weight_decay, params, grads, momentum_buffer, 0, n, first_step);
}

template <typename T>
void sgd_step_groups(const SgdOptions& o, std::span<const SgdGroup> groups, T* params, const T* grads,
                     T* momentum_buffer, std::int64_t n, bool first_step) {
  check_step(o, momentum_buffer, n);
  for (const SgdGroup& t : tile_sgd_groups(groups, o.weight_decay, n)) {
    if (t.frozen) continue;
    sgd_range(o, o.lr * t.lr_scale, t.weight_decay, params, grads, momentum_buffer, t.begin, t.end,
              first_step);
  }
}

template void sgd_step<float>(const SgdOptions&, float*, const float*, float*, std::int64_t, bool);
template void sgd_step<double>(const SgdOptions&, double*, const double*, double*, std::int64_t, bool);
template void sgd_step_groups<float>(const SgdOptions&, std::span<const SgdGroup>, float*, const float*,
                                     float*, std::int64_t, bool);
template void sgd_step_groups<double>(const SgdOptions&, std::span<const SgdGroup>, double*, const double*,
                                      double*, std::int64_t, bool);

}  // namespace engine::cpu
