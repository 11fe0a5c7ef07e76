#pragma once
// GELU, the CPU reference: PyTorch's nn.GELU() (approximate='none'), the exact erf form
//   y  = x * Phi(x) = x/2 * erfc(-x/sqrt(2))
//   dx = dy * (Phi(x) + x * phi(x)),   phi(x) = exp(-x^2/2) / sqrt(2 pi)
// Phi is written with erfc rather than 1 + erf so that it keeps its relative accuracy for negative x (where
// 1 + erf cancels; PyTorch's 1 + erf gives -0 below about x = -8 in float64, we give the tail, < 1e-15 in
// size); the function is the same. Computed in double and rounded once to T. NaN propagates; as PyTorch,
// y(+inf) = +inf, y(-inf) = -inf * 0 = NaN, and the gradient at +-inf is NaN (x phi(x) = inf * 0).
//
// Backward OVERWRITES dx (it never accumulates into it).

#include <cstdint>

namespace engine::cpu {

// y[i] = gelu(x[i]) for i in [0, n). y may alias x.
template <typename T>
void gelu_forward(const T* x, T* y, std::int64_t n);

// dx[i] = dy[i] * gelu'(x[i]). Takes the forward input x. dx may alias dy.
template <typename T>
void gelu_backward(const T* x, const T* dy, T* dx, std::int64_t n);

}  // namespace engine::cpu
