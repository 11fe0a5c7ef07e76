#pragma once
// BatchNorm2d on the GPU, the semantics of kernels/cpu/batchnorm2d.h exactly (BatchNorm2dShape):
// biased variance normalizes, the UNBIASED variance (sum / (M - 1)) goes into running_var, momentum 0.1 by
// default, save_mean / save_invstd hold the batch mean and 1 / sqrt(var + eps) for backward. gamma/beta may
// be nullptr (affine = false), and then dgamma/dbeta must be nullptr. Backward OVERWRITES dx, dgamma, dbeta
// (each may be nullptr when not wanted).
//
// The statistics, per channel over M = N*H*W values:
//   pass 1 (a reduction): S1 = sum (x - K), S2 = sum (x - K)^2 accumulated in DOUBLE, where the shift K is
//     the channel's first value x[0, c, 0, 0]. Shifting by a value of the data removes the cancellation of
//     E[x^2] - E[x]^2 when |mean| >> std (the error then scales with (mean - K)^2, i.e. with the spread of
//     the data, not with its offset), and double accumulation (53-bit) keeps the rounding of M adds far
//     below float resolution for any M a GPU holds. One read of x instead of two-pass's two.
//   The reduction is split over a grid (channel x chunk of the M values); each block writes its partial
//   (S1, S2) in double to a scratch buffer and the last block of each channel to finish adds the chunks in
//   a fixed order and finishes the channel (channel_reduce.cuh): no atomics on the sums, so the statistics
//   and everything downstream are deterministic (bitwise equal run to run).
//   mean = K + S1/M, var = S2/M - (S1/M)^2 (all double), invstd = 1/sqrt(var + eps).
// Backward reduces sum dy and sum dy * xhat the same way (double, fixed order), then dx elementwise.
// Scratch (a few KB) comes from the caching allocator on `stream`.
//
// Fused ReLU (as kernels/cpu_fast/batchnorm2d.h): forward `relu` writes relu(y) in the normalize pass;
// backward `relu_y` (that forward's output) masks every read of dy by relu_y > 0, in the sums and in dx.
// Kernels per call: forward 2 (sums + finish, normalize), backward 3 (statistics, sums + finish, dx).
//
// Layout NHWC: x, y, dy, dx, relu_y channels last. The same arithmetic; the reductions walk rows of C
// contiguous values (channel_reduce_nhwc.cuh: a block owns 32 channels, finished in the same fixed order),
// the elementwise passes walk memory in order. The shift K is still x[0, c, 0, 0] (at offset c).

#include "core/dtype.h"
#include "core/layout.h"
#include "kernels/cpu/batchnorm2d.h"
#include "kernels/cuda_api.h"

namespace engine::cuda {

void batchnorm2d_forward_training(cudaStream_t stream, const BatchNorm2dShape& shape, const float* x,
                                  const float* gamma, const float* beta, float* y, float* save_mean,
                                  float* save_invstd, float* running_mean, float* running_var,
                                  double momentum = cpu::kBatchNormDefaultMomentum,
                                  double eps = cpu::kBatchNormDefaultEps, bool relu = false,
                                  const float* running_mean_shift = nullptr, Layout layout = Layout::NCHW);

void batchnorm2d_forward_eval(cudaStream_t stream, const BatchNorm2dShape& shape, const float* x,
                              const float* gamma, const float* beta, const float* running_mean,
                              const float* running_var, float* y, double eps = cpu::kBatchNormDefaultEps,
                              bool relu = false, Layout layout = Layout::NCHW);

void batchnorm2d_backward_training(cudaStream_t stream, const BatchNorm2dShape& shape, const float* x,
                                   const float* gamma, const float* save_mean, const float* save_invstd,
                                   const float* dy, float* dx, float* dgamma, float* dbeta,
                                   const float* relu_y = nullptr, Layout layout = Layout::NCHW);

void batchnorm2d_backward_eval(cudaStream_t stream, const BatchNorm2dShape& shape, const float* x,
                               const float* gamma, const float* running_mean, const float* running_var,
                               const float* dy, float* dx, float* dgamma, float* dbeta,
                               double eps = cpu::kBatchNormDefaultEps, const float* relu_y = nullptr,
                               Layout layout = Layout::NCHW);

// The same over bf16 storage (bf16 autocast): x, y, dy, dx and the fused ReLU's output bf16, loaded to
// float; statistics, coefficients and parameters float32/double exactly as above; each output rounded once
// to bf16 at the store.
void batchnorm2d_forward_training(cudaStream_t stream, const BatchNorm2dShape& shape, const bfloat16* x,
                                  const float* gamma, const float* beta, bfloat16* y, float* save_mean,
                                  float* save_invstd, float* running_mean, float* running_var,
                                  double momentum, double eps, bool relu,
                                  const float* running_mean_shift = nullptr, Layout layout = Layout::NCHW);
void batchnorm2d_forward_eval(cudaStream_t stream, const BatchNorm2dShape& shape, const bfloat16* x,
                              const float* gamma, const float* beta, const float* running_mean,
                              const float* running_var, bfloat16* y, double eps, bool relu,
                              Layout layout = Layout::NCHW);
void batchnorm2d_backward_training(cudaStream_t stream, const BatchNorm2dShape& shape, const bfloat16* x,
                                   const float* gamma, const float* save_mean, const float* save_invstd,
                                   const bfloat16* dy, bfloat16* dx, float* dgamma, float* dbeta,
                                   const bfloat16* relu_y, Layout layout = Layout::NCHW);
void batchnorm2d_backward_eval(cudaStream_t stream, const BatchNorm2dShape& shape, const bfloat16* x,
                               const float* gamma, const float* running_mean, const float* running_var,
                               const bfloat16* dy, bfloat16* dx, float* dgamma, float* dbeta, double eps,
                               const bfloat16* relu_y, Layout layout = Layout::NCHW);

}  // namespace engine::cuda
