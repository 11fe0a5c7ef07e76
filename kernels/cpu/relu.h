#pragma once
// ReLU, the CPU reference: y = max(x, 0).
//
// Gradient rule at exactly 0: dx = 0 (the subgradient PyTorch picks, since it tests x > 0), so the GPU
// kernels and this oracle agree on every input, kink included. NaN propagates in forward (y = NaN, as
// torch.relu) and gets gradient 0 (NaN > 0 is false).
//
// Backward OVERWRITES dx (it never accumulates into it); the caller sums contributions if it needs to.

#include <cstdint>

namespace engine::cpu {

// y[i] = x[i] > 0 ? x[i] : 0 for i in [0, n). y may alias x.
template <typename T>
void relu_forward(const T* x, T* y, std::int64_t n);

// dx[i] = x[i] > 0 ? dy[i] : 0. Takes the forward input x (not y): the rule is stated on x. dx may alias dy.
template <typename T>
void relu_backward(const T* x, const T* dy, T* dx, std::int64_t n);

}  // namespace engine::cpu
