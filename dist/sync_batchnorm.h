#pragma once
// SyncBatchNorm's arithmetic over a ProcessGroup: training-mode batch normalization whose statistics are
// those of the batch concatenated over all ranks (PyTorch's nn.SyncBatchNorm). A BatchNorm layer calls these
// instead of the single-process kernels; dist::SyncBatchNorm2d (dist/sync_batchnorm_layer.h) is such a layer.
//
// Forward: each rank computes, per channel, its count n_r, mean_r and centred sum of squares
// M2_r = sum (x - mean_r)^2 (in double), and ONE all-gather shares them; every rank combines them in rank
// order (Chan et al.'s pairwise update: no sum-of-squares cancellation, the same bits on every rank) into the
// global mean and biased variance M2 / M that normalize, and the unbiased M2 / (M - 1) that updates the
// running variance, as BatchNorm2d does.
// Backward: each rank computes sum(dy) and sum(dy * xhat) per channel over its share; ONE all-reduce (sum)
// gives the global sums and count M, and
//   dx = gamma * invstd * (dy - sum_dy / M - xhat * sum_dy_xhat / M)
// is this rank's share of the concatenated-batch dx. dgamma and dbeta stay LOCAL (sum over this rank's
// share): the Reducer's average over ranks then turns them into the concatenated-batch gradients (each rank's
// loss is a mean over its own share, so its dy is world_size times the concatenated-batch dy).
//
// Tensors: x, y, dy, dx [N, C, H, W], all in one layout, NCHW or NHWC (a mix is refused naming them; the
// host path walks each channel in the same order in both, so they give the same bits); gamma, beta,
// save_mean, save_invstd, running_mean, running_var, dgamma, dbeta [C]; all float32 or all float64. CPU
// tensors are computed here on the host. CUDA tensors (float32) stay on the device:
// kernels/cuda/sync_batchnorm.h computes the local moments and sums and the global stage in the tensors'
// layout, and the collective between them is queued on `stream` (NCCL: no host synchronization; gloo:
// through its host copies). Throws engine::Error when the global count per channel is < 2 (CUDA: when a
// rank's share holds fewer than 2 values per channel).

#include "core/tensor.h"
#include "dist/process_group.h"

namespace engine::dist {

void sync_batchnorm_forward_training(ProcessGroup& pg, const Tensor& x, const Tensor& gamma,
                                     const Tensor& beta, const Tensor& y, const Tensor& save_mean,
                                     const Tensor& save_invstd, const Tensor& running_mean,
                                     const Tensor& running_var, double momentum, double eps,
                                     void* stream = nullptr);

// `dx` may be undefined (the first layer's input gradient is not wanted).
void sync_batchnorm_backward_training(ProcessGroup& pg, const Tensor& x, const Tensor& gamma,
                                      const Tensor& save_mean, const Tensor& save_invstd, const Tensor& dy,
                                      const Tensor& dx, const Tensor& dgamma, const Tensor& dbeta,
                                      void* stream = nullptr);

}  // namespace engine::dist
