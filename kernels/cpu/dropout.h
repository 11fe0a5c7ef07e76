#pragma once
// Inverted dropout, the CPU reference: each element is kept with probability 1 - p and kept elements are
// scaled by 1 / (1 - p), so the expected output equals the input and evaluation needs no rescaling.
//
// The mask is a pure function of (seed, offset, i), shared with the CUDA kernel so both draw the SAME mask:
//
//     keep element i  iff  engine::philox_uniform(seed, offset, i) >= p      (core/philox.h, p as float)
//
// philox_uniform is a multiple of 2^-24 in [0, 1), so p = 0 keeps everything (identity) and p = 1 keeps
// nothing (zeros; the 1/(1-p) scale is never formed). p outside [0, 1] (or NaN) throws engine::Error.
// `offset` names one dropout call (one layer in one step); a new call must use a new offset.
//
// No mask is stored: backward regenerates it from the same (seed, offset). Backward OVERWRITES dx.

#include <cstdint>

namespace engine::cpu {

// mask[i] = 1 if element i is kept, else 0, for i in [0, n). For tests and for the GPU comparison.
void dropout_mask(float p, std::uint64_t seed, std::uint64_t offset, std::uint8_t* mask, std::int64_t n);

// y[i] = keep(i) ? x[i] / (1 - p) : 0. The scale is formed in double and each product rounded once to T.
template <typename T>
void dropout_forward(float p, std::uint64_t seed, std::uint64_t offset, const T* x, T* y, std::int64_t n);

// dx[i] = keep(i) ? dy[i] / (1 - p) : 0, with the mask of the forward call that used (seed, offset).
template <typename T>
void dropout_backward(float p, std::uint64_t seed, std::uint64_t offset, const T* dy, T* dx, std::int64_t n);

}  // namespace engine::cpu
