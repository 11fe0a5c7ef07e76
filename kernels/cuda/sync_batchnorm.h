#pragma once
// SyncBatchNorm's device stages (float32, CUDA), the arithmetic of dist/sync_batchnorm.h without host copies:
// dist/sync_batchnorm.cpp runs one collective between the two stages of each direction, on the same stream,
// so a training step never waits on the host for batch norm.
//
//   forward   local_moments   one kernel: per channel this rank's count, mean and M2 = sum (x - mean)^2, in
//                             double, from the shifted sums of batchnorm2d.cu: local = [count, mean[C],
//                             M2[C]]
//             (all-gather of `local` over the ranks)
//             forward_global  combines the gathered moments in rank order (Chan's update, the host path's
//                             rule, so every rank gets the same bits), writes save_mean/save_invstd, updates
//                             the running statistics (unbiased variance) and normalizes x into y
//   backward  local_grad_sums per channel sum dy and sum dy * xhat over this rank's share, in double:
//                             local = [sum_dy[C], sum_dy_xhat[C], count]; dgamma and dbeta get the LOCAL sums
//                             (the Reducer's average over ranks makes them the concatenated batch's)
//             (all-reduce sum of `local`)
//             backward_global dx = gamma * invstd * (dy - sum_dy / M - xhat * sum_dy_xhat / M) with the
//                             global sums and count M
// Reductions are BatchNorm2d's fixed-order, atomic-free one-kernel reductions (channel_reduce.cuh in NCHW,
// channel_reduce_nhwc.cuh in NHWC; the last block of a channel finishes it): deterministic. `layout` is that
// of x, y, dy and dx (core/layout.h); the shift K = x[0, c, 0, 0] sits at c * H*W in NCHW and at c in NHWC.
// Each rank's share must hold at least 2 values per channel (checked), so the global count is always > 1.

#include "core/layout.h"
#include "kernels/cpu/batchnorm2d.h"
#include "kernels/cuda_api.h"

namespace engine::cuda {

// Elements of the `local` buffers, for C channels.
inline std::int64_t sync_batchnorm_moments_size(int channels) {
  return 1 + 2 * static_cast<std::int64_t>(channels);
}
inline std::int64_t sync_batchnorm_grad_sums_size(int channels) {
  return 2 * static_cast<std::int64_t>(channels) + 1;
}

void sync_batchnorm_local_moments(cudaStream_t stream, const BatchNorm2dShape& shape, const float* x,
                                  double* local, Layout layout);

// `gathered`: world_size consecutive `local` buffers, rank 0 first.
void sync_batchnorm_forward_global(cudaStream_t stream, const BatchNorm2dShape& shape, const double* gathered,
                                   int world_size, const float* x, const float* gamma, const float* beta,
                                   float* y, float* save_mean, float* save_invstd, float* running_mean,
                                   float* running_var, double momentum, double eps, Layout layout);

void sync_batchnorm_local_grad_sums(cudaStream_t stream, const BatchNorm2dShape& shape, const float* x,
                                    const float* dy, const float* save_mean, const float* save_invstd,
                                    double* local, float* dgamma, float* dbeta, Layout layout);

// `reduced`: the all-reduced (summed) `local` of local_grad_sums. `dx` may be null (nothing to do then).
void sync_batchnorm_backward_global(cudaStream_t stream, const BatchNorm2dShape& shape, const double* reduced,
                                    const float* x, const float* gamma, const float* save_mean,
                                    const float* save_invstd, const float* dy, float* dx, Layout layout);

}  // namespace engine::cuda
