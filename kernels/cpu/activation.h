#pragma once
// The pointwise activations of kernels/activation_kind.h (Sigmoid, Tanh, SiLU, HardSigmoid, HardSwish, Clip,
// LeakyRelu), the CPU reference: each formula written out plainly in double and rounded once to T; it does
// not use the float functors the fast paths share (kernels/elementwise_math.h), so it stays their oracle.
// NaN propagates forward; the gradient at a kink is PyTorch's (kernels/activation_kind.h).
//
// Backward takes what the forward kept, `saved`: its output y for Sigmoid and Tanh, its input x for the
// others (kernels/activation_kind.h: activation_backward_reads_output). It OVERWRITES dx (never accumulates).

#include <cstdint>

#include "kernels/activation_kind.h"

namespace engine::cpu {

// y[i] = f(x[i]) for i in [0, n). y may alias x.
template <typename T>
void activation_forward(const ActivationParams& p, const T* x, T* y, std::int64_t n);

// dx[i] = dy[i] * f'(x[i]), f' formed from saved[i]. dx may alias dy.
template <typename T>
void activation_backward(const ActivationParams& p, const T* saved, const T* dy, T* dx, std::int64_t n);

// The value and derivative in double (the tests' tolerances and the gradient checks read them).
double activation_value(const ActivationParams& p, double x);
double activation_derivative(const ActivationParams& p, double x);
// f' from the output y, for the kinds whose backward reads it (Sigmoid: y (1 - y); Tanh: 1 - y^2).
double activation_derivative_from_output(const ActivationParams& p, double y);

}  // namespace engine::cpu
