#pragma once
// One SGD step over a flat float32 buffer on the host, fast: vectorised and OpenMP-threaded, in float (as
// PyTorch's own float32 SGD). Same update and contract as cpu::sgd_step (kernels/cpu/sgd.h, the oracle,
// which computes in double and rounds once): weight decay, momentum with dampening, Nesterov, and the first
// step's buffer = g. The float arithmetic differs from it by a few ulps of the terms per element.

#include <cstdint>
#include <span>

#include "core/dtype.h"
#include "kernels/cpu/sgd.h"

namespace engine::cpu_fast {

// bf16_mirror (optional, bf16 autocast: Model::flat_parameters_bf16()): each updated parameter's bf16
// rounding is written there in the same pass, so the mirror never lags the master weights.
void sgd_step(const cpu::SgdOptions& options, float* params, const float* grads, float* momentum_buffer,
              std::int64_t n, bool first_step, bfloat16* bf16_mirror = nullptr);

// With parameter groups (cpu::tile_sgd_groups): each tile's range with lr * lr_scale (formed in double, then
// rounded to float) and its weight decay; frozen tiles untouched.
void sgd_step_groups(const cpu::SgdOptions& options, std::span<const cpu::SgdGroup> groups, float* params,
                     const float* grads, float* momentum_buffer, std::int64_t n, bool first_step,
                     bfloat16* bf16_mirror = nullptr);

}  // namespace engine::cpu_fast
