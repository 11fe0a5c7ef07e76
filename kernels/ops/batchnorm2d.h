#pragma once
// BatchNorm2d over NCHW (per channel). Training normalizes with the batch statistics, saves mean and inverse
// std for backward and updates the running statistics as PyTorch; eval uses the running statistics.
// dx may be undefined (no input gradient).
//
// Fused ReLU (the model's fusion pass, layers/model.h): a forward with `relu` true writes y = relu(BN(x));
// a backward given `relu_y` (that forward's y) reads dy masked by relu_y > 0, ReLU's backward folded into
// BatchNorm's. The fast float32 CPU kernels and the CUDA kernels do it inside their passes; the float64
// reference path runs the plain composition of the reference kernels (kernels/cpu/batchnorm2d.h then
// kernels/cpu/relu.h), which is also what the fused kernels are tested against.
//
// Folded conv bias (layers/fusion.h): `running_mean_shift` ([C], optional) is the bias of the Conv2d before
// this BatchNorm, which that conv did not add in training mode; it enters the running-mean update only (the
// batch normalization removes any per-channel constant). Every path takes it inside its statistics finish.

#include "core/execution_context.h"
#include "core/tensor.h"
#include "kernels/cpu/batchnorm2d.h"

namespace engine::ops {

void batchnorm2d_forward_training(const ExecutionContext& ctx, const BatchNorm2dShape& s, const Tensor& x,
                                  const Tensor& gamma, const Tensor& beta, const Tensor& y,
                                  const Tensor& save_mean, const Tensor& save_invstd,
                                  const Tensor& running_mean, const Tensor& running_var, double momentum,
                                  double eps, bool relu = false, const Tensor& running_mean_shift = Tensor());
void batchnorm2d_forward_eval(const ExecutionContext& ctx, const BatchNorm2dShape& s, const Tensor& x,
                              const Tensor& gamma, const Tensor& beta, const Tensor& running_mean,
                              const Tensor& running_var, const Tensor& y, double eps, bool relu = false);
void batchnorm2d_backward_training(const ExecutionContext& ctx, const BatchNorm2dShape& s, const Tensor& x,
                                   const Tensor& gamma, const Tensor& save_mean, const Tensor& save_invstd,
                                   const Tensor& dy, const Tensor& dx, const Tensor& dgamma,
                                   const Tensor& dbeta, const Tensor& relu_y = Tensor());
void batchnorm2d_backward_eval(const ExecutionContext& ctx, const BatchNorm2dShape& s, const Tensor& x,
                               const Tensor& gamma, const Tensor& running_mean, const Tensor& running_var,
                               const Tensor& dy, const Tensor& dx, const Tensor& dgamma, const Tensor& dbeta,
                               double eps, const Tensor& relu_y = Tensor());

}  // namespace engine::ops
