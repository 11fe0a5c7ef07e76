#pragma once
// Two-operand elementwise ops with numpy broadcasting (kernels/broadcast.h), the CPU reference: each value
// formed in double and rounded once to T; a gradient sums over the broadcast axes in double, in the order of
// the reduced index space, and is OVERWRITTEN.

#include <cstdint>

#include "kernels/broadcast.h"

namespace engine::cpu {

// y (the output's elements in memory order: g.numel of them) = a op b.
template <typename T>
void binary_forward(BinaryOp op, const BroadcastAxes& g, const T* a, const T* b, T* y);

// dL/d(operand) of g.operand, one value per kept index.
template <typename T>
void binary_backward(BinaryOp op, const BroadcastGrad& g, const T* dy, const T* a, const T* b, T* dx);

}  // namespace engine::cpu
