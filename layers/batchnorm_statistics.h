#pragma once
// The pluggable step of BatchNorm2d: how a training-mode forward gets its batch statistics (and how the
// backward of those statistics is formed). LocalBatchNormStatistics uses this process's batch
// (kernels/ops/batchnorm2d.h); dist::AllReducedBatchNormStatistics (dist/sync_batchnorm_layer.h) combines the
// statistics of every rank of a process group (SyncBatchNorm). Eval mode needs no statistics step: it
// normalizes with the running statistics, the same code for both.
//
// Tensors: x, y, dy, dx [N, C, H, W]; gamma, beta, save_mean, save_invstd, running_mean, running_var,
// dgamma, dbeta [C]. dx may be undefined (no input gradient).

#include <string_view>

#include "core/execution_context.h"
#include "core/tensor.h"
#include "kernels/cpu/batchnorm2d.h"

namespace engine::layers {

class BatchNormStatistics {
 public:
  virtual ~BatchNormStatistics() = default;

  // The layer kind it makes ("BatchNorm2d", "SyncBatchNorm2d"): errors and model summaries show it.
  virtual std::string_view layer_kind() const = 0;
  // True when the statistics are those of this process's batch alone, so the batch itself must hold more
  // than one value per channel (a global step checks the global count itself).
  virtual bool local() const = 0;
  // True when the training step is exactly ops::batchnorm2d_forward_training / _backward_training, whose
  // fused-ReLU form BatchNorm2d then calls when the model's fusion pass folds a ReLU into it
  // (layers/fusion.h). Other steps (SyncBatchNorm's all-reduced statistics) are never fused.
  virtual bool fuses_relu() const { return false; }

  virtual void forward_training(const ExecutionContext& ctx, const BatchNorm2dShape& s, const Tensor& x,
                                const Tensor& gamma, const Tensor& beta, const Tensor& y,
                                const Tensor& save_mean, const Tensor& save_invstd,
                                const Tensor& running_mean, const Tensor& running_var, double momentum,
                                double eps) = 0;
  virtual void backward_training(const ExecutionContext& ctx, const BatchNorm2dShape& s, const Tensor& x,
                                 const Tensor& gamma, const Tensor& save_mean, const Tensor& save_invstd,
                                 const Tensor& dy, const Tensor& dx, const Tensor& dgamma,
                                 const Tensor& dbeta) = 0;
};

// This process's batch: the kernels of kernels/ops/batchnorm2d.h.
class LocalBatchNormStatistics final : public BatchNormStatistics {
 public:
  std::string_view layer_kind() const override { return "BatchNorm2d"; }
  bool local() const override { return true; }
  bool fuses_relu() const override { return true; }
  void forward_training(const ExecutionContext& ctx, const BatchNorm2dShape& s, const Tensor& x,
                        const Tensor& gamma, const Tensor& beta, const Tensor& y, const Tensor& save_mean,
                        const Tensor& save_invstd, const Tensor& running_mean, const Tensor& running_var,
                        double momentum, double eps) override;
  void backward_training(const ExecutionContext& ctx, const BatchNorm2dShape& s, const Tensor& x,
                         const Tensor& gamma, const Tensor& save_mean, const Tensor& save_invstd,
                         const Tensor& dy, const Tensor& dx, const Tensor& dgamma,
                         const Tensor& dbeta) override;
};

}  // namespace engine::layers
