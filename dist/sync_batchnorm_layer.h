#pragma once
// SyncBatchNorm2d: layers::BatchNorm2d whose training-mode statistics span every rank of a ProcessGroup
// (dist/sync_batchnorm.h), PyTorch's nn.SyncBatchNorm. Same parameters, buffers, counter and state-dict
// names, same checks and the same eval mode (plain batch norm with the running statistics, nothing to
// synchronize), so checkpoints are interchangeable. It lives in dist/ because it needs a ProcessGroup.

#include "dist/process_group.h"
#include "layers/batchnorm2d.h"

namespace engine::dist {

// The statistics step of SyncBatchNorm: one all-gather of the per-rank moments forward, one all-reduce of
// the sums backward, queued on the context's stream. `pg` must outlive it.
class AllReducedBatchNormStatistics final : public layers::BatchNormStatistics {
 public:
  explicit AllReducedBatchNormStatistics(ProcessGroup& pg) : pg_(pg) {}

  std::string_view layer_kind() const override { return "SyncBatchNorm2d"; }
  bool local() const override { return false; }
  void forward_training(const ExecutionContext& ctx, const BatchNorm2dShape& s, const Tensor& x,
                        const Tensor& gamma, const Tensor& beta, const Tensor& y, const Tensor& save_mean,
                        const Tensor& save_invstd, const Tensor& running_mean, const Tensor& running_var,
                        double momentum, double eps) override;
  void backward_training(const ExecutionContext& ctx, const BatchNorm2dShape& s, const Tensor& x,
                         const Tensor& gamma, const Tensor& save_mean, const Tensor& save_invstd,
                         const Tensor& dy, const Tensor& dx, const Tensor& dgamma,
                         const Tensor& dbeta) override;

 private:
  ProcessGroup& pg_;
};

class SyncBatchNorm2d final : public layers::BatchNorm2d {
 public:
  // `pg` must outlive the layer.
  SyncBatchNorm2d(ProcessGroup& pg, int num_features, double eps = 1e-5, double momentum = 0.1);
};

}  // namespace engine::dist
