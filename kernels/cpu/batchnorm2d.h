#pragma once
// Batch normalization over NCHW (PyTorch's BatchNorm2d, same semantics), float64-accumulating CPU reference:
// the oracle every GPU batch-norm kernel is tested against, and the CPU device's implementation.
//
// Layouts, all contiguous:
//   x, y, dx, dy               [N, C, H, W]
//   gamma, beta, running_mean, running_var, save_mean, save_invstd, dgamma, dbeta   [C]
// Statistics are per channel, over the M = N*H*W values of that channel.
//
// gamma and beta may be nullptr (affine=False: gamma = 1, beta = 0); then pass nullptr for dgamma/dbeta.
// Every sum is accumulated in double whatever the storage type T (float or double).

#include <cstddef>

#include "kernels/shapes.h"

namespace engine::cpu {

inline constexpr double kBatchNormDefaultMomentum = 0.1;
inline constexpr double kBatchNormDefaultEps = 1e-5;

// Training mode. Per channel c, with the batch statistics
//   mean = sum x / M,   var = sum (x - mean)^2 / M   (biased: the one that normalizes),
//   invstd = 1 / sqrt(var + eps),
//   y = gamma * (x - mean) * invstd + beta.
// Saves mean and invstd (what backward needs). When running_mean / running_var are not nullptr they are
// updated in place as PyTorch does, with the UNBIASED variance:
//   running_mean = (1 - momentum) * running_mean + momentum * mean
//   running_var  = (1 - momentum) * running_var  + momentum * sum (x - mean)^2 / (M - 1)
// running_mean_shift (optional, [C]) is added to the batch mean in the running-mean update only: the conv
// bias folded into this BatchNorm (layers/fusion.h), which x lacks; normalization does not depend on it.
// Throws engine::Error when M < 2 (as PyTorch: "Expected more than 1 value per channel when training").
template <typename T>
void batchnorm2d_forward_training(const BatchNorm2dShape& shape, const T* x, const T* gamma, const T* beta,
                                  T* y, T* save_mean, T* save_invstd, T* running_mean, T* running_var,
                                  double momentum = kBatchNormDefaultMomentum,
                                  double eps = kBatchNormDefaultEps, const T* running_mean_shift = nullptr);

// Eval mode: y = gamma * (x - running_mean) / sqrt(running_var + eps) + beta; the running stats are read
// only.
template <typename T>
void batchnorm2d_forward_eval(const BatchNorm2dShape& shape, const T* x, const T* gamma, const T* beta,
                              const T* running_mean, const T* running_var, T* y,
                              double eps = kBatchNormDefaultEps);

// Backward of the training-mode forward, from its saved mean and invstd. The batch statistics depend on x,
// which adds two terms to dx. With xhat = (x - mean) * invstd, per channel:
//   dbeta  = sum dy
//   dgamma = sum dy * xhat
//   dx     = gamma * invstd * (dy - dbeta / M - xhat * dgamma / M)
// OVERWRITES (never accumulates into) dx, dgamma, dbeta; each may be nullptr when not wanted.
template <typename T>
void batchnorm2d_backward_training(const BatchNorm2dShape& shape, const T* x, const T* gamma,
                                   const T* save_mean, const T* save_invstd, const T* dy, T* dx, T* dgamma,
                                   T* dbeta);

// Backward of the eval-mode forward (the statistics are constants): with invstd = 1 / sqrt(running_var +
// eps),
//   dx = dy * gamma * invstd,   dgamma = sum dy * (x - running_mean) * invstd,   dbeta = sum dy.
// OVERWRITES (never accumulates into) dx, dgamma, dbeta; each may be nullptr when not wanted.
template <typename T>
void batchnorm2d_backward_eval(const BatchNorm2dShape& shape, const T* x, const T* gamma,
                               const T* running_mean, const T* running_var, const T* dy, T* dx, T* dgamma,
                               T* dbeta, double eps = kBatchNormDefaultEps);

}  // namespace engine::cpu
