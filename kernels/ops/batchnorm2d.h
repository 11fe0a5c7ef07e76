#pragma once
// BatchNorm2d over NCHW (per channel). Training normalizes with the batch statistics, saves mean and inverse
// std for backward and updates the running statistics as PyTorch; eval uses the running statistics.
// dx may be undefined (no input gradient).

#include "core/execution_context.h"
#include "core/tensor.h"
#include "kernels/cpu/batchnorm2d.h"

namespace engine::ops {

void batchnorm2d_forward_training(const ExecutionContext& ctx, const BatchNorm2dShape& s, const Tensor& x,
                                  const Tensor& gamma, const Tensor& beta, const Tensor& y,
                                  const Tensor& save_mean, const Tensor& save_invstd,
                                  const Tensor& running_mean, const Tensor& running_var, double momentum,
                                  double eps);
void batchnorm2d_forward_eval(const ExecutionContext& ctx, const BatchNorm2dShape& s, const Tensor& x,
                              const Tensor& gamma, const Tensor& beta, const Tensor& running_mean,
                              const Tensor& running_var, const Tensor& y, double eps);
void batchnorm2d_backward_training(const ExecutionContext& ctx, const BatchNorm2dShape& s, const Tensor& x,
                                   const Tensor& gamma, const Tensor& save_mean, const Tensor& save_invstd,
                                   const Tensor& dy, const Tensor& dx, const Tensor& dgamma,
                                   const Tensor& dbeta);
void batchnorm2d_backward_eval(const ExecutionContext& ctx, const BatchNorm2dShape& s, const Tensor& x,
                               const Tensor& gamma, const Tensor& running_mean, const Tensor& running_var,
                               const Tensor& dy, const Tensor& dx, const Tensor& dgamma, const Tensor& dbeta,
                               double eps);

}  // namespace engine::ops
