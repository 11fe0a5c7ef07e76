#pragma once
// SyncBatchNorm2d: a Layer with BatchNorm2d's parameters, buffers, counter and state-dict names, whose
// training-mode statistics span every rank of a ProcessGroup (dist/sync_batchnorm.h). Eval mode is plain
// BatchNorm with the running statistics (nothing to synchronize). It lives in dist/ because it needs a
// ProcessGroup; a model that should synchronize its batch norms is built with this layer in place of
// layers::BatchNorm2d (checkpoints are interchangeable: same names, same shapes).

#include "dist/process_group.h"
#include "layers/layer.h"

namespace engine::dist {

class SyncBatchNorm2d final : public layers::Layer {
 public:
  // `pg` must outlive the layer.
  SyncBatchNorm2d(ProcessGroup& pg, int num_features, double eps = 1e-5, double momentum = 0.1);

  std::string_view kind() const override { return "SyncBatchNorm2d"; }
  int num_features() const { return num_features_; }

 protected:
  Tensor forward_impl(const Tensor& x, layers::Mode mode) override;
  Tensor backward_impl(const Tensor& dy, layers::Mode mode) override;
  Shape output_shape_impl(const Shape& input_shape) const override;

 private:
  ProcessGroup& pg_;
  int num_features_;
  double eps_, momentum_;
  std::size_t weight_ = 0, bias_ = 0, running_mean_ = 0, running_var_ = 0, num_batches_tracked_ = 0;
  Tensor x_, save_mean_, save_invstd_;
};

}  // namespace engine::dist
