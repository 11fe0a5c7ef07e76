#pragma once
// 2-d convolution, NCHW x KCRS. On CUDA, ExecutionContext::conv_algorithm picks cuDNN or the
// implicit-GEMM convolution (kernels/cuda/conv2d_implicit_gemm.h). bias, dx and db may be undefined tensors
// (no bias; no input gradient).

#include <memory>

#include "core/execution_context.h"
#include "core/tensor.h"
#include "kernels/cpu/conv2d.h"

namespace engine::cpu_fast {
class ConvSaved;
}

namespace engine::ops {

// What a layer keeps between a convolution's forward and its backward (layers/conv2d.h): on the CPU's fast
// paths the forward's input in oneDNN's layout, so backward-weights does not convert x again
// (cpu_fast::ConvSaved, whose contract holds: the backward given it is given the forward's x, unchanged).
// Empty until the first forward that keeps one; other devices leave it so.
using Conv2dSaved = std::shared_ptr<cpu_fast::ConvSaved>;

// Under ctx.autocast_bf16, w_bf16 is w's bf16 mirror (a view of Model::flat_parameters_bf16()) and the op
// runs kernels/ops/autocast_bf16.h's arithmetic; otherwise it is ignored. `saved`: null, or the caller's
// state for the backward of this forward.
void conv2d_forward(const ExecutionContext& ctx, const Conv2dShape& s, const Tensor& x, const Tensor& w,
                    const Tensor& bias, const Tensor& y, const Tensor& w_bf16 = Tensor(),
                    Conv2dSaved* saved = nullptr);
void conv2d_backward(const ExecutionContext& ctx, const Conv2dShape& s, const Tensor& x, const Tensor& w,
                     const Tensor& dy, const Tensor& dx, const Tensor& dw, const Tensor& db,
                     const Tensor& w_bf16 = Tensor(), Conv2dSaved* saved = nullptr);

}  // namespace engine::ops
