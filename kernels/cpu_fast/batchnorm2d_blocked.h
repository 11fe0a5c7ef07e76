#pragma once
// BatchNorm2d, float32 or bf16 storage on the host, on activations in a blocked layout (core/layout.h:
// nChw8c, nChw16c; `block` is its channels per block, 8 or 16, and C a multiple of it): what a model in a
// blocked layout runs between its oneDNN convolutions, so no reorder sits between them. Same contract,
// arguments, fused ReLU and bf16 rounding as batchnorm2d.h's NCHW kernels (each may-be-null output too).
//
// Arithmetic: the NCHW kernels' (per channel, double sums, then each output formed in double and rounded to
// float once); the channels of a block are a block's vector lanes, and each channel's sums run n outer, cell
// inner in order (the NCHW kernels' vectorised sums add the same values in another order). So the two agree
// to the double sums' rounding, which a float output almost never sees: about 1 ulp of float at most.

#include "core/dtype.h"
#include "kernels/cpu/batchnorm2d.h"

namespace engine::cpu_fast {

template <typename T>  // float, bfloat16
void batchnorm2d_forward_training_blocked(int block, const BatchNorm2dShape& shape, const T* x,
                                          const float* gamma, const float* beta, T* y, float* save_mean,
                                          float* save_invstd, float* running_mean, float* running_var,
                                          double momentum, double eps, bool relu,
                                          const float* running_mean_shift);

template <typename T>
void batchnorm2d_forward_eval_blocked(int block, const BatchNorm2dShape& shape, const T* x,
                                      const float* gamma, const float* beta, const float* running_mean,
                                      const float* running_var, T* y, double eps, bool relu);

template <typename T>
void batchnorm2d_backward_training_blocked(int block, const BatchNorm2dShape& shape, const T* x,
                                           const float* gamma, const float* save_mean,
                                           const float* save_invstd, const T* dy, T* dx, float* dgamma,
                                           float* dbeta, const T* relu_y);

template <typename T>
void batchnorm2d_backward_eval_blocked(int block, const BatchNorm2dShape& shape, const T* x,
                                       const float* gamma, const float* running_mean,
                                       const float* running_var, const T* dy, T* dx, float* dgamma,
                                       float* dbeta, double eps, const T* relu_y);

}  // namespace engine::cpu_fast
