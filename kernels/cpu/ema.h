#pragma once
// Exponential moving average of the weights (EMA) and its lookahead form, the CPU reference, over a flat
// buffer: for each element, in double, rounded to T once,
//
//     ema = ema + (1 - rho) * (x - ema)        torch: ema.lerp_(x, 1 - rho)
//     x   = ema                                 only with copy_back (lookahead: airbench94 copies the average
//                                               back into the network every few steps)
//
// rho = 1 keeps the average (and, with copy_back, puts it into x); rho = 0 takes x. torch's lerp_ on float32
// computes in float with its own two-sided formula, so it agrees within a float ulp of the operands, not
// bitwise; the CUDA kernel repeats this reference's double operations exactly.

#include <cstdint>

namespace engine::cpu {

// Throws engine::Error for rho outside [0, 1] (or NaN), a negative n, or null pointers with n > 0.
template <typename T>
void ema_update(double rho, T* ema, T* x, std::int64_t n, bool copy_back);

}  // namespace engine::cpu
