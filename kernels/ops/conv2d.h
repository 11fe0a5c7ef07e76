#pragma once
// 2-d convolution, NCHW x KCRS. On CUDA, ExecutionContext::conv_algorithm picks cuDNN or the
// implicit-GEMM convolution (kernels/cuda/conv2d_implicit_gemm.h). bias, dx and db may be undefined tensors
// (no bias; no input gradient).

#include "core/execution_context.h"
#include "core/tensor.h"
#include "kernels/cpu/conv2d.h"

namespace engine::ops {

// Under ctx.autocast_bf16, w_bf16 is w's bf16 mirror (a view of Model::flat_parameters_bf16()) and the op
// runs kernels/ops/autocast_bf16.h's arithmetic; otherwise it is ignored.
void conv2d_forward(const ExecutionContext& ctx, const Conv2dShape& s, const Tensor& x, const Tensor& w,
                    const Tensor& bias, const Tensor& y, const Tensor& w_bf16 = Tensor());
void conv2d_backward(const ExecutionContext& ctx, const Conv2dShape& s, const Tensor& x, const Tensor& w,
                     const Tensor& dy, const Tensor& dx, const Tensor& dw, const Tensor& db,
                     const Tensor& w_bf16 = Tensor());

}  // namespace engine::ops
