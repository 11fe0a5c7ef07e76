#pragma once
// BatchNorm2d in training mode, float32 on the host, fast: OpenMP threads over channels, each channel's sums
// in double (vectorised conversions), the elementwise passes in float. Same contract as
// cpu::batchnorm2d_forward_training / batchnorm2d_backward_training (kernels/cpu/batchnorm2d.h, the oracle):
// two-pass variance, biased variance for normalising, unbiased for running_var, dx/dgamma/dbeta overwritten
// (each may be null), gamma/beta may be null (1 and 0).
//
// The arithmetic is the reference's (double, rounded to float once per output); what differs is only the
// order of the double sums (four-way vectorised), so outputs agree with it to about one float rounding.

#include "kernels/cpu/batchnorm2d.h"

namespace engine::cpu_fast {

void batchnorm2d_forward_training(const BatchNorm2dShape& shape, const float* x, const float* gamma,
                                  const float* beta, float* y, float* save_mean, float* save_invstd,
                                  float* running_mean, float* running_var,
                                  double momentum = cpu::kBatchNormDefaultMomentum,
                                  double eps = cpu::kBatchNormDefaultEps);

void batchnorm2d_backward_training(const BatchNorm2dShape& shape, const float* x, const float* gamma,
                                   const float* save_mean, const float* save_invstd, const float* dy,
                                   float* dx, float* dgamma, float* dbeta);

}  // namespace engine::cpu_fast
