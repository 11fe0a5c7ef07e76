#pragma once
// y = x W^T + b, [N, in] x [out, in] (cuBLAS on CUDA, oneDNN GEMM for CPU float32).
// bias, dx and db may be undefined tensors (no bias; no input gradient).

#include "core/execution_context.h"
#include "core/tensor.h"
#include "kernels/cpu/linear.h"

namespace engine::ops {

void linear_forward(const ExecutionContext& ctx, const LinearShape& s, const Tensor& x, const Tensor& w,
                    const Tensor& bias, const Tensor& y);
void linear_backward(const ExecutionContext& ctx, const LinearShape& s, const Tensor& x, const Tensor& w,
                     const Tensor& dy, const Tensor& dx, const Tensor& dw, const Tensor& db);

}  // namespace engine::ops
