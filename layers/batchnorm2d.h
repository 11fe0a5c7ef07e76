#pragma once
// BatchNorm2d: PyTorch's nn.BatchNorm2d(num_features, eps=1e-5, momentum=0.1, affine=True,
// track_running_stats=True).
//
//   parameters  "weight" (gamma, init 1), "bias" (beta, init 0)                      [C]
//   buffers     "running_mean" (init 0), "running_var" (init 1)                      [C]
//   counter     "num_batches_tracked": +1 per training-mode forward, kept on the host as an int64 (PyTorch
//               keeps a 0-dim int64 buffer; with momentum set it is only bookkeeping, but checkpoints carry
//               it so PyTorch's load_state_dict(strict=True) accepts them)
//
// Train mode normalizes with the batch statistics (biased variance), saves the batch mean and invstd for
// backward, and updates the running statistics with the UNBIASED variance, as PyTorch. Eval mode normalizes
// with the running statistics and leaves them alone. Backward uses the formula of the mode of the last
// forward. Training needs more than one value per channel (N*H*W > 1), as PyTorch.
//
// The training-mode statistics step is pluggable (layers/batchnorm_statistics.h): this process's batch by
// default, or every rank's through a process group (dist::SyncBatchNorm2d is this class with that step).
//
// Fused ReLU (layers/fusion.h): with set_fused_relu(true) the layer outputs relu(BN(x)) in the same kernel
// pass and folds ReLU's backward into its own (dy masked by its output > 0); the ReLU that followed it
// becomes a pass-through. Same parameters, buffers and state dict. Only local statistics fuse.
//
// Folded conv bias (layers/fusion.h): with set_folded_conv(conv), the Conv2d before this layer leaves its
// bias out in training mode and this layer adds it to the batch mean in its running-mean update (inside the
// statistics kernel), which is where the bias would have shown. Only local statistics fold.

#include <memory>

#include "layers/batchnorm_statistics.h"
#include "layers/conv2d.h"
#include "layers/layer.h"

namespace engine::layers {

class BatchNorm2d : public Layer {
 public:
  // `statistics` null: LocalBatchNormStatistics.
  explicit BatchNorm2d(int num_features, double eps = 1e-5, double momentum = 0.1,
                       std::unique_ptr<BatchNormStatistics> statistics = nullptr);

  std::string_view kind() const override { return statistics_->layer_kind(); }
  int num_features() const { return num_features_; }
  double eps() const { return eps_; }
  double momentum() const { return momentum_; }  // PyTorch's meaning: the batch's weight
  const Tensor& running_mean() const { return buffer_slots()[running_mean_].value; }
  const Tensor& running_var() const { return buffer_slots()[running_var_].value; }
  std::int64_t num_batches_tracked() const { return counter_slots()[num_batches_tracked_].value; }
  // The last training-mode forward's batch statistics ([C]; undefined before one, and after its backward).
  const Tensor& saved_mean() const { return save_mean_; }
  const Tensor& saved_invstd() const { return save_invstd_; }

  // Whether this layer can carry the ReLU that follows it (its statistics step is the local one).
  bool can_fuse_relu() const { return statistics_->fuses_relu(); }
  // Applies ReLU to the output and folds ReLU's backward in. Before the model is finalized only.
  void set_fused_relu(bool fused);
  bool fused_relu() const { return fused_relu_; }
  // Takes in `conv`'s bias, which `conv` (the layer feeding this one) leaves out in training mode. Before
  // the model is finalized; local statistics only.
  void set_folded_conv(const Conv2d* conv);
  const Conv2d* folded_conv() const { return folded_conv_; }
  // The storage of the last forward's output (null before one): a fused ReLU checks it is fed exactly that.
  const void* last_output_data() const { return last_output_data_; }

 protected:
  Tensor forward_impl(const Tensor& x, Mode mode) override;
  Tensor backward_impl(const Tensor& dy, Mode mode) override;
  Shape output_shape_impl(const Shape& input_shape) const override;

 private:
  std::unique_ptr<BatchNormStatistics> statistics_;
  int num_features_;
  double eps_, momentum_;
  std::size_t weight_ = 0, bias_ = 0, running_mean_ = 0, running_var_ = 0, num_batches_tracked_ = 0;
  Tensor x_, save_mean_, save_invstd_;
  bool fused_relu_ = false;
  const Conv2d* folded_conv_ = nullptr;
  Tensor y_;  // the fused output, kept for backward's ReLU mask (fused only)
  const void* last_output_data_ = nullptr;
};

}  // namespace engine::layers
