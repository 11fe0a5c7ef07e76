#pragma once
// Two-operand elementwise ops with broadcasting on the GPU: the float formulas of kernels/broadcast.h (the
// ones kernels/cpu_fast/binary applies), a gradient summed over the broadcast axes in double, in the same
// order, by one thread per element of the operand: bitwise equal to the fast CPU kernel.

#include "kernels/broadcast.h"
#include "kernels/cuda_api.h"

namespace engine::cuda {

void binary_forward(cudaStream_t stream, BinaryOp op, const BroadcastAxes& g, const float* a, const float* b,
                    float* y);
void binary_backward(cudaStream_t stream, BinaryOp op, const BroadcastGrad& g, const float* dy,
                     const float* a, const float* b, float* dx);

}  // namespace engine::cuda
