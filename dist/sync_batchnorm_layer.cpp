#include "dist/sync_batchnorm_layer.h"

#include <memory>

#include "dist/sync_batchnorm.h"
#include "kernels/ops/bf16_storage.h"

namespace engine::dist {

void AllReducedBatchNormStatistics::forward_training(const ExecutionContext& ctx, const BatchNorm2dShape&,
                                                     const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                                     const Tensor& y, const Tensor& save_mean,
                                                     const Tensor& save_invstd, const Tensor& running_mean,
                                                     const Tensor& running_var, double momentum, double eps) {
  // bf16 activations (bf16 autocast): the float32 kernels on float32 copies (kernels/ops/bf16_storage.h).
  const auto run = [&](const Tensor* in, const Tensor* out) {
    sync_batchnorm_forward_training(pg_, in[0], gamma, beta, out[0], save_mean, save_invstd, running_mean,
                                    running_var, momentum, eps, ctx.stream);
  };
  if (!ops::bf16::on_float32(ctx, {x}, {y}, run)) run(&x, &y);
}

void AllReducedBatchNormStatistics::backward_training(const ExecutionContext& ctx, const BatchNorm2dShape&,
                                                      const Tensor& x, const Tensor& gamma,
                                                      const Tensor& save_mean, const Tensor& save_invstd,
                                                      const Tensor& dy, const Tensor& dx,
                                                      const Tensor& dgamma, const Tensor& dbeta) {
  const auto run = [&](const Tensor* in, const Tensor* out) {
    sync_batchnorm_backward_training(pg_, in[0], gamma, save_mean, save_invstd, in[1], out[0], dgamma, dbeta,
                                     ctx.stream);
  };
  const Tensor ins[] = {x, dy};
  if (!ops::bf16::on_float32(ctx, {x, dy}, {dx}, run)) run(ins, &dx);
}

SyncBatchNorm2d::SyncBatchNorm2d(ProcessGroup& pg, int num_features, double eps, double momentum)
    : layers::BatchNorm2d(num_features, eps, momentum, std::make_unique<AllReducedBatchNormStatistics>(pg)) {}

}  // namespace engine::dist
