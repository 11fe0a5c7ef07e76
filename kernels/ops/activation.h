#pragma once
// The pointwise activations of kernels/activation_kind.h, one entry point per direction (kernels/ops/
// dispatch.h picks the kernel; any layout, elementwise). Backward takes `saved`, what the forward kept: its
// output y for Sigmoid and Tanh, its input x for the others (activation_backward_reads_output); dx may alias
// dy.

#include "core/execution_context.h"
#include "core/tensor.h"
#include "kernels/activation_kind.h"

namespace engine::ops {

void activation_forward(const ExecutionContext& ctx, const ActivationParams& p, const Tensor& x,
                        const Tensor& y);
void activation_backward(const ExecutionContext& ctx, const ActivationParams& p, const Tensor& saved,
                         const Tensor& dy, const Tensor& dx);

}  // namespace engine::ops
