#pragma once
// One SGD step over a flat float32 buffer on the host, fast: vectorised and OpenMP-threaded, in float (as
// PyTorch's own float32 SGD). Same update and contract as cpu::sgd_step (kernels/cpu/sgd.h, the oracle,
// which computes in double and rounds once): weight decay, momentum with dampening, Nesterov, and the first
// step's buffer = g. The float arithmetic differs from it by a few ulps of the terms per element.

#include <cstdint>
#include <span>

#include "kernels/cpu/sgd.h"

namespace engine::cpu_fast {

void sgd_step(const cpu::SgdOptions& options, float* params, const float* grads, float* momentum_buffer,
              std::int64_t n, bool first_step);

// With parameter groups (cpu::tile_sgd_groups): each tile's range with lr * lr_scale (formed in double, then
// rounded to float) and its weight decay; frozen tiles untouched.
void sgd_step_groups(const cpu::SgdOptions& options, std::span<const cpu::SgdGroup> groups, float* params,
                     const float* grads, float* momentum_buffer, std::int64_t n, bool first_step);

}  // namespace engine::cpu_fast
