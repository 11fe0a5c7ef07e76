#pragma once
// Fused softmax cross-entropy (mean over the batch, label smoothing) on the GPU, the semantics of
// kernels/cpu/softmax_cross_entropy.h: with eps = label_smoothing and q = (1 - eps) onehot + eps / k,
//   loss     = (1/n) sum_i [ logsumexp(z_i) - (1 - eps) z_i[label_i] - (eps/k) sum_j z_i[j] ]
//   dlogits  = (softmax(z) - q) / n * dloss
// One pass over the logits gives the loss, the gradient and the correct count; nothing is copied to the
// host, so a training step never synchronizes for its metrics.
//
// Per row: one warp (k up to a few thousand; a row of CIFAR has 10), max-subtracted exp, float arithmetic.
// The n row losses are then added in double, in a fixed order, by one block: deterministic.
//
// Outputs (device pointers):
//   loss           [1] float, OVERWRITTEN with this batch's mean loss. May be nullptr.
//   dlogits        [n, k], OVERWRITTEN. nullptr for evaluation (no gradient).
//   loss_sum       [1] double, ACCUMULATED: += sum over rows of the row loss (not divided by n), for
//                  epoch metrics (divide by the sample count when read). May be nullptr.
//   correct        [1] int64, ACCUMULATED: += rows whose argmax equals the label (cpu::predict_classes'
//                  rule: first maximum wins, a NaN is the maximum). May be nullptr.
// Labels outside [0, k) cannot be checked on the host without a sync: such a row gets a NaN loss and NaN
// gradients (so the failure is loud) and never counts as correct.

#include <cstdint>

#include "kernels/cuda_api.h"

namespace engine::cuda {

// step_losses, loss_slot (device addresses, or null), slots: the mean loss is also written to
// step_losses[*loss_slot] when 0 <= *loss_slot < slots: a CUDA graph's step reads its slot from the step
// state (apps/train/step_state.h), so each replay's loss lands in its own entry of the epoch's array.
void softmax_cross_entropy(cudaStream_t stream, const float* logits, const std::int32_t* labels, int n, int k,
                           double label_smoothing, float* loss, float* dlogits, double* loss_sum,
                           std::int64_t* correct, double dloss = 1.0, float* step_losses = nullptr,
                           const std::int64_t* loss_slot = nullptr, std::int64_t slots = 0);

// predicted[i] = argmax of row i (the rule above). For prediction apps and tests.
void predict_classes(cudaStream_t stream, const float* logits, int n, int k, std::int32_t* predicted);

}  // namespace engine::cuda
