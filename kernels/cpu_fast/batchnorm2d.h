#pragma once
// BatchNorm2d, float32 on the host, fast: OpenMP threads over channels, each channel's sums in double
// (vectorised conversions). Same contract as kernels/cpu/batchnorm2d.h (the oracle): two-pass variance,
// biased variance for normalising, unbiased for running_var, dx/dgamma/dbeta overwritten (each may be null),
// gamma/beta may be null (1 and 0).
//
// The arithmetic is the reference's (double, rounded to float once per output); what differs is only the
// order of the double sums (vectorised), so outputs agree with it to about one float rounding.
//
// Fused ReLU (the model's fusion pass, layers/model.h; the CUDA kernels fuse the same way):
//   forward  `relu` true: y = relu(BN(x)) in the same pass that writes y (NaN propagates, as
//            kernels/cpu/relu.h);
//   backward `relu_y` non-null: it is that forward's fused output, and every read of dy is masked by
//            relu_y > 0: ReLU's backward (gradient 0 at the kink and for NaN) folded into BatchNorm's sums
//            and its dx pass. relu(v) > 0 exactly when v > 0, so the mask is the one ReLU would apply.
//
// bf16 storage (bf16 autocast, kernels/ops/bf16_storage.h): the same kernels with x, y, dy, dx and relu_y
// bfloat16 (parameters, statistics and their gradients float32): the same double arithmetic on the widened
// values, each output rounded to float and then once to bf16 (bf16_io.h): bit for bit the float32 kernel on
// the widened tensors with its outputs rounded, without the float32 copies.

#include "core/dtype.h"
#include "kernels/cpu/batchnorm2d.h"

namespace engine::cpu_fast {

void batchnorm2d_forward_training(const BatchNorm2dShape& shape, const float* x, const float* gamma,
                                  const float* beta, float* y, float* save_mean, float* save_invstd,
                                  float* running_mean, float* running_var,
                                  double momentum = cpu::kBatchNormDefaultMomentum,
                                  double eps = cpu::kBatchNormDefaultEps, bool relu = false,
                                  const float* running_mean_shift = nullptr);

void batchnorm2d_forward_eval(const BatchNorm2dShape& shape, const float* x, const float* gamma,
                              const float* beta, const float* running_mean, const float* running_var,
                              float* y, double eps = cpu::kBatchNormDefaultEps, bool relu = false);

void batchnorm2d_backward_training(const BatchNorm2dShape& shape, const float* x, const float* gamma,
                                   const float* save_mean, const float* save_invstd, const float* dy,
                                   float* dx, float* dgamma, float* dbeta, const float* relu_y = nullptr);

void batchnorm2d_backward_eval(const BatchNorm2dShape& shape, const float* x, const float* gamma,
                               const float* running_mean, const float* running_var, const float* dy,
                               float* dx, float* dgamma, float* dbeta, double eps = cpu::kBatchNormDefaultEps,
                               const float* relu_y = nullptr);

void batchnorm2d_forward_training(const BatchNorm2dShape& shape, const bfloat16* x, const float* gamma,
                                  const float* beta, bfloat16* y, float* save_mean, float* save_invstd,
                                  float* running_mean, float* running_var, double momentum, double eps,
                                  bool relu, const float* running_mean_shift);
void batchnorm2d_forward_eval(const BatchNorm2dShape& shape, const bfloat16* x, const float* gamma,
                              const float* beta, const float* running_mean, const float* running_var,
                              bfloat16* y, double eps, bool relu);
void batchnorm2d_backward_training(const BatchNorm2dShape& shape, const bfloat16* x, const float* gamma,
                                   const float* save_mean, const float* save_invstd, const bfloat16* dy,
                                   bfloat16* dx, float* dgamma, float* dbeta, const bfloat16* relu_y);
void batchnorm2d_backward_eval(const BatchNorm2dShape& shape, const bfloat16* x, const float* gamma,
                               const float* running_mean, const float* running_var, const bfloat16* dy,
                               bfloat16* dx, float* dgamma, float* dbeta, double eps, const bfloat16* relu_y);

}  // namespace engine::cpu_fast
