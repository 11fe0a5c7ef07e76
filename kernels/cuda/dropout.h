#pragma once
// Inverted dropout on the GPU with the CPU reference's exact rule (kernels/cpu/dropout.h):
//
//     keep element i  iff  engine::philox_uniform(seed, offset, i) >= p
//
// so the GPU mask equals the CPU mask bit for bit, and y[i] = keep ? float(double(x[i]) * (1 / (1 - p))) : 0
// equals the CPU output bit for bit too. p = 1 writes zeros. No mask is stored: backward regenerates it
// from (seed, offset). Backward OVERWRITES dx. p outside [0, 1] throws engine::Error.
//
// offset_base (a device address, or null): the offset used is *offset_base + offset, read by the kernel. A
// CUDA graph replays its kernels with the arguments they were captured with, so the step's first offset
// comes from the step state (apps/train/step_state.h) and `offset` is the call's index within the step.

#include <cstdint>

#include "core/dtype.h"
#include "kernels/cuda_api.h"

namespace engine::cuda {

void dropout_forward(cudaStream_t stream, float p, std::uint64_t seed, std::uint64_t offset, const float* x,
                     float* y, std::int64_t n, const std::uint64_t* offset_base = nullptr);
void dropout_backward(cudaStream_t stream, float p, std::uint64_t seed, std::uint64_t offset, const float* dy,
                      float* dx, std::int64_t n, const std::uint64_t* offset_base = nullptr);
// The same over bf16 storage (bf16 autocast): the same mask, the kept value scaled in double and rounded
// once to bf16.
void dropout_forward(cudaStream_t stream, float p, std::uint64_t seed, std::uint64_t offset,
                     const bfloat16* x, bfloat16* y, std::int64_t n,
                     const std::uint64_t* offset_base = nullptr);
void dropout_backward(cudaStream_t stream, float p, std::uint64_t seed, std::uint64_t offset,
                      const bfloat16* dy, bfloat16* dx, std::int64_t n,
                      const std::uint64_t* offset_base = nullptr);

// mask[i] = 1 if kept, else 0 (tests compare it with cpu::dropout_mask).
void dropout_mask(cudaStream_t stream, float p, std::uint64_t seed, std::uint64_t offset, std::uint8_t* mask,
                  std::int64_t n);

}  // namespace engine::cuda
