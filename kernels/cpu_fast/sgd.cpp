#include "kernels/cpu_fast/sgd.h"

#include "core/error.h"
#include "kernels/cpu_fast/parallel.h"

namespace engine::cpu_fast {

namespace {

// The bf16 mirror's element: written only when the step keeps a mirror (kMirror), in the update's loop.
template <bool kMirror>
inline void write_mirror(bfloat16* mirror, std::int64_t i, float p) {
  if constexpr (kMirror) mirror[i] = to_bfloat16(p);
}

// Elements [begin, end) with their own lr and weight decay.
template <bool kMirror>
void sgd_range(const cpu::SgdOptions& o, double lr_d, double wd_d, float* params, const float* grads,
               float* momentum_buffer, std::int64_t begin, std::int64_t end, bool first_step,
               bfloat16* mirror_base) {
  const std::int64_t n = end - begin;
  const bool use_momentum = o.momentum != 0.0;
  const float lr = static_cast<float>(lr_d), wd = static_cast<float>(wd_d);
  const float mom = static_cast<float>(o.momentum), keep = static_cast<float>(1.0 - o.dampening);
  float* p = params + begin;
  const float* gr = grads + begin;
  bfloat16* mirror = kMirror ? mirror_base + begin : nullptr;
  if (!use_momentum) {
#pragma omp parallel for simd if (n >= kParallelMinElements) schedule(static)
    for (std::int64_t i = 0; i < n; ++i) {
      p[i] -= lr * (gr[i] + wd * p[i]);
      write_mirror<kMirror>(mirror, i, p[i]);
    }
    return;
  }
  float* b = momentum_buffer + begin;
  // The three momentum cases as separate loops, so each vectorises without a branch per element.
  // The two loops differ (b = g, or the momentum update); inside a template clang-tidy 14 compares OpenMP
  // directives by kind, not by body (untemplated, it is silent), hence the NOLINT.
  if (first_step) {  // NOLINT(bugprone-branch-clone)
#pragma omp parallel for simd if (n >= kParallelMinElements) schedule(static)
    for (std::int64_t i = 0; i < n; ++i) {
      const float g = gr[i] + wd * p[i];
      b[i] = g;
      p[i] -= lr * (o.nesterov ? g + mom * g : g);
      write_mirror<kMirror>(mirror, i, p[i]);
    }
  } else {
#pragma omp parallel for simd if (n >= kParallelMinElements) schedule(static)
    for (std::int64_t i = 0; i < n; ++i) {
      const float g = gr[i] + wd * p[i];
      const float buf = mom * b[i] + keep * g;
      b[i] = buf;
      p[i] -= lr * (o.nesterov ? g + mom * buf : buf);
      write_mirror<kMirror>(mirror, i, p[i]);
    }
  }
}

void check_step(const cpu::SgdOptions& o, const float* momentum_buffer, std::int64_t n) {
  o.validate();
  ENGINE_CHECK(n >= 0, "sgd_step: parameter count must be non-negative, got {}", n);
  ENGINE_CHECK(o.momentum == 0.0 || momentum_buffer != nullptr || n == 0,
               "sgd_step: momentum={} needs a momentum buffer, got null", o.momentum);
}

void range_with_mirror(const cpu::SgdOptions& o, double lr, double wd, float* params, const float* grads,
                       float* momentum_buffer, std::int64_t begin, std::int64_t end, bool first_step,
                       bfloat16* mirror) {
  if (mirror != nullptr) {
    sgd_range<true>(o, lr, wd, params, grads, momentum_buffer, begin, end, first_step, mirror);
  } else {
    sgd_range<false>(o, lr, wd, params, grads, momentum_buffer, begin, end, first_step, nullptr);
  }
}

}  // namespace

void sgd_step(const cpu::SgdOptions& o, float* params, const float* grads, float* momentum_buffer,
              std::int64_t n, bool first_step, bfloat16* bf16_mirror) {
  check_step(o, momentum_buffer, n);
  range_with_mirror(o, o.lr, o.weight_decay, params, grads, momentum_buffer, 0, n, first_step, bf16_mirror);
}

void sgd_step_groups(const cpu::SgdOptions& o, std::span<const cpu::SgdGroup> groups, float* params,
                     const float* grads, float* momentum_buffer, std::int64_t n, bool first_step,
                     bfloat16* bf16_mirror) {
  check_step(o, momentum_buffer, n);
  for (const cpu::SgdGroup& t : cpu::tile_sgd_groups(groups, o.weight_decay, n)) {
    if (t.frozen) continue;
    range_with_mirror(o, o.lr * t.lr_scale, t.weight_decay, params, grads, momentum_buffer, t.begin, t.end,
                      first_step, bf16_mirror);
  }
}

}  // namespace engine::cpu_fast
