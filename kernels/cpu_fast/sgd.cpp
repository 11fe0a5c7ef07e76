#include "kernels/cpu_fast/sgd.h"

#include "core/error.h"
#include "kernels/cpu_fast/parallel.h"

namespace engine::cpu_fast {

namespace {

// Elements [begin, end) with their own lr and weight decay.
void sgd_range(const cpu::SgdOptions& o, double lr_d, double wd_d, float* params, const float* grads,
               float* momentum_buffer, std::int64_t begin, std::int64_t end, bool first_step) {
  const std::int64_t n = end - begin;
  const bool use_momentum = o.momentum != 0.0;
  const float lr = static_cast<float>(lr_d), wd = static_cast<float>(wd_d);
  const float mom = static_cast<float>(o.momentum), keep = static_cast<float>(1.0 - o.dampening);
  float* p = params + begin;
  const float* gr = grads + begin;
  if (!use_momentum) {
#pragma omp parallel for simd if (n >= kParallelMinElements) schedule(static)
    for (std::int64_t i = 0; i < n; ++i) p[i] -= lr * (gr[i] + wd * p[i]);
    return;
  }
  float* b = momentum_buffer + begin;
  // The three momentum cases as separate loops, so each vectorises without a branch per element.
  if (first_step) {
#pragma omp parallel for simd if (n >= kParallelMinElements) schedule(static)
    for (std::int64_t i = 0; i < n; ++i) {
      const float g = gr[i] + wd * p[i];
      b[i] = g;
      p[i] -= lr * (o.nesterov ? g + mom * g : g);
    }
  } else {
#pragma omp parallel for simd if (n >= kParallelMinElements) schedule(static)
    for (std::int64_t i = 0; i < n; ++i) {
      const float g = gr[i] + wd * p[i];
      const float buf = mom * b[i] + keep * g;
      b[i] = buf;
      p[i] -= lr * (o.nesterov ? g + mom * buf : buf);
    }
  }
}

void check_step(const cpu::SgdOptions& o, const float* momentum_buffer, std::int64_t n) {
  o.validate();
  ENGINE_CHECK(n >= 0, "sgd_step: parameter count must be non-negative, got {}", n);
  ENGINE_CHECK(o.momentum == 0.0 || momentum_buffer != nullptr || n == 0,
               "sgd_step: momentum={} needs a momentum buffer, got null", o.momentum);
}

}  // namespace

void sgd_step(const cpu::SgdOptions& o, float* params, const float* grads, float* momentum_buffer,
              std::int64_t n, bool first_step) {
  check_step(o, momentum_buffer, n);
  sgd_range(o, o.lr, o.weight_decay, params, grads, momentum_buffer, 0, n, first_step);
}

void sgd_step_groups(const cpu::SgdOptions& o, std::span<const cpu::SgdGroup> groups, float* params,
                     const float* grads, float* momentum_buffer, std::int64_t n, bool first_step) {
  check_step(o, momentum_buffer, n);
  for (const cpu::SgdGroup& t : cpu::tile_sgd_groups(groups, o.weight_decay, n)) {
    if (t.frozen) continue;
    sgd_range(o, o.lr * t.lr_scale, t.weight_decay, params, grads, momentum_buffer, t.begin, t.end,
              first_step);
  }
}

}  // namespace engine::cpu_fast
