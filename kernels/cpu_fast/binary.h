#pragma once
// Two-operand elementwise ops with broadcasting in float32 on the host, OpenMP-threaded: each value is the
// float formula of kernels/broadcast.h (the one the CUDA kernel applies), walked by rows of the innermost
// axis (vector loops where its strides are 0 or 1); a gradient's sum over the broadcast axes is accumulated
// in double in vector lanes (the CUDA kernel: in the reduced index order; double makes the order's effect
// negligible beside the float terms' roundings), rounded once.

#include "kernels/broadcast.h"

namespace engine::cpu_fast {

void binary_forward(BinaryOp op, const BroadcastAxes& g, const float* a, const float* b, float* y);
void binary_backward(BinaryOp op, const BroadcastGrad& g, const float* dy, const float* a, const float* b,
                     float* dx);

}  // namespace engine::cpu_fast
