#pragma once
// SGD step on the GPU as ONE fused kernel over the flat parameter buffer: params, grads and the momentum
// buffer are each one contiguous array (the engine keeps all parameters in one buffer, so a single launch
// updates the whole model). The semantics are kernels/cpu/sgd.h's (torch.optim.SGD) exactly, and so is the
// arithmetic: the same double operations in the same order, with no FMA contraction (explicit _rn
// intrinsics), so the result is bitwise equal to cpu::sgd_step<float>.
//
// options.validate() is called; momentum != 0 needs a momentum buffer. `first_step` = the buffer holds
// nothing yet (torch's momentum_buffer is None).
//
// `device_lr`: when not null, the kernel reads the learning rate from this device address (one double, e.g.
// the step state of a captured CUDA graph, apps/train/step_state.h) instead of options.lr, so a replayed
// graph applies each step's rate. The arithmetic is the same: for the same value the result is bitwise the
// same. options.lr is still validated (the caller passes the value it wrote there).

#include <cstdint>

#include "core/dtype.h"
#include "kernels/cpu/sgd.h"
#include "kernels/cuda_api.h"

namespace engine::cuda {

// bf16_mirror (optional, bf16 autocast: Model::flat_parameters_bf16()): each updated parameter's bf16
// rounding (core/dtype.h's to_bfloat16) is stored there by the same thread, in the same pass.
void sgd_step(cudaStream_t stream, const cpu::SgdOptions& options, float* params, const float* grads,
              float* momentum_buffer, std::int64_t n, bool first_step, bfloat16* bf16_mirror = nullptr,
              const double* device_lr = nullptr);

// With parameter groups, still one launch: `device_tiles` is cpu::tile_sgd_groups(...)'s output (`count`
// entries tiling [0, n)) copied to device memory once (optim::Sgd does); each thread finds its element's tile
// by a binary search over the begins. Bitwise equal to cpu::sgd_step_groups<float>; frozen tiles untouched.
void sgd_step_tiles(cudaStream_t stream, const cpu::SgdOptions& options, const cpu::SgdGroup* device_tiles,
                    int count, float* params, const float* grads, float* momentum_buffer, std::int64_t n,
                    bool first_step, bfloat16* bf16_mirror = nullptr, const double* device_lr = nullptr);

}  // namespace engine::cuda
