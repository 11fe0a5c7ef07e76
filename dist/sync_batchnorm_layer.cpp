#include "dist/sync_batchnorm_layer.h"

#include <memory>

#include "dist/sync_batchnorm.h"

namespace engine::dist {

void AllReducedBatchNormStatistics::forward_training(const ExecutionContext& ctx, const BatchNorm2dShape&,
                                                     const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                                     const Tensor& y, const Tensor& save_mean,
                                                     const Tensor& save_invstd, const Tensor& running_mean,
                                                     const Tensor& running_var, double momentum, double eps) {
  sync_batchnorm_forward_training(pg_, x, gamma, beta, y, save_mean, save_invstd, running_mean, running_var,
                                  momentum, eps, ctx.stream);
}

void AllReducedBatchNormStatistics::backward_training(const ExecutionContext& ctx, const BatchNorm2dShape&,
                                                      const Tensor& x, const Tensor& gamma,
                                                      const Tensor& save_mean, const Tensor& save_invstd,
                                                      const Tensor& dy, const Tensor& dx,
                                                      const Tensor& dgamma, const Tensor& dbeta) {
  sync_batchnorm_backward_training(pg_, x, gamma, save_mean, save_invstd, dy, dx, dgamma, dbeta, ctx.stream);
}

SyncBatchNorm2d::SyncBatchNorm2d(ProcessGroup& pg, int num_features, double eps, double momentum)
    : layers::BatchNorm2d(num_features, eps, momentum, std::make_unique<AllReducedBatchNormStatistics>(pg)) {}

}  // namespace engine::dist
