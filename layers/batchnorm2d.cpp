#include "layers/batchnorm2d.h"

#include <cmath>

#include "kernels/ops/batchnorm2d.h"
#include "layers/detail.h"

namespace engine::layers {

void LocalBatchNormStatistics::forward_training(const ExecutionContext& ctx, const BatchNorm2dShape& s,
                                                const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                                const Tensor& y, const Tensor& save_mean,
                                                const Tensor& save_invstd, const Tensor& running_mean,
                                                const Tensor& running_var, double momentum, double eps) {
  ops::batchnorm2d_forward_training(ctx, s, x, gamma, beta, y, save_mean, save_invstd, running_mean,
                                    running_var, momentum, eps);
}

void LocalBatchNormStatistics::backward_training(const ExecutionContext& ctx, const BatchNorm2dShape& s,
                                                 const Tensor& x, const Tensor& gamma,
                                                 const Tensor& save_mean, const Tensor& save_invstd,
                                                 const Tensor& dy, const Tensor& dx, const Tensor& dgamma,
                                                 const Tensor& dbeta) {
  ops::batchnorm2d_backward_training(ctx, s, x, gamma, save_mean, save_invstd, dy, dx, dgamma, dbeta);
}

BatchNorm2d::BatchNorm2d(int num_features, double eps, double momentum,
                         std::unique_ptr<BatchNormStatistics> statistics)
    : statistics_(statistics ? std::move(statistics) : std::make_unique<LocalBatchNormStatistics>()),
      num_features_(num_features),
      eps_(eps),
      momentum_(momentum) {
  LAYER_CHECK(num_features > 0, "num_features must be positive, got {}", num_features);
  LAYER_CHECK(eps > 0.0 && std::isfinite(eps), "eps must be positive, got {}", eps);
  LAYER_CHECK(momentum >= 0.0 && momentum <= 1.0, "momentum must be in [0, 1], got {}", momentum);
  weight_ = add_parameter("weight", {num_features}, ParamInit::Ones);
  bias_ = add_parameter("bias", {num_features}, ParamInit::Zeros);
  running_mean_ = add_buffer("running_mean", {num_features}, 0.0);
  running_var_ = add_buffer("running_var", {num_features}, 1.0);
  num_batches_tracked_ = add_counter("num_batches_tracked");
}

void BatchNorm2d::set_fused_relu(bool fused) {
  LAYER_CHECK(!finalized(), "the ReLU fusion is decided before the model is finalized");
  LAYER_CHECK(!fused || can_fuse_relu(), "a {} does not fuse a ReLU (its statistics step is not local)",
              kind());
  fused_relu_ = fused;
}

void BatchNorm2d::set_folded_conv(const Conv2d* conv) {
  LAYER_CHECK(!finalized(), "the conv bias fold is decided before the model is finalized");
  LAYER_CHECK(conv == nullptr || can_fuse_relu(),
              "a {} does not take in a conv bias (its statistics step is not local)", kind());
  LAYER_CHECK(conv == nullptr || (conv->has_bias() && conv->options().out_channels == num_features_),
              "the folded conv must have a bias of {} channels", num_features_);
  folded_conv_ = conv;
}

namespace {

BatchNorm2dShape geometry(const Shape& x) {
  return {.n = detail::to_int(x[0]),
          .c = detail::to_int(x[1]),
          .h = detail::to_int(x[2]),
          .w = detail::to_int(x[3])};
}

}  // namespace

Shape BatchNorm2d::output_shape_impl(const Shape& in) const {
  LAYER_CHECK(in.size() == 4, "expects an input [N, C, H, W], got {}", shape_str(in));
  LAYER_CHECK(in[1] == num_features_, "expects {} channels, got an input {}", num_features_, shape_str(in));
  LAYER_CHECK(in[0] > 0 && in[2] > 0 && in[3] > 0, "empty input {}", shape_str(in));
  return in;
}

Tensor BatchNorm2d::forward_impl(const Tensor& x, Mode mode) {
  const BatchNorm2dShape s = geometry(x.shape());
  if (mode == Mode::Train && statistics_->local()) {
    LAYER_CHECK(s.count() > 1, "expected more than 1 value per channel when training, got an input {}",
                x.str());
  }
  Tensor y = new_tensor(x.shape(), x.dtype());
  const Tensor& gamma = param(weight_).value;
  const Tensor& beta = param(bias_).value;
  const Tensor& rmean = buffer(running_mean_).value;
  const Tensor& rvar = buffer(running_var_).value;
  if (mode == Mode::Train) {
    save_mean_ = new_tensor({num_features_});
    save_invstd_ = new_tensor({num_features_});
    if (fused_relu_ || folded_conv_ != nullptr) {
      // Local statistics (both require it): the statistics step is exactly this op, in its fused form.
      ops::batchnorm2d_forward_training(context(), s, x, gamma, beta, y, save_mean_, save_invstd_, rmean,
                                        rvar, momentum_, eps_, fused_relu_,
                                        folded_conv_ != nullptr ? folded_conv_->bias() : Tensor());
    } else {
      statistics_->forward_training(context(), s, x, gamma, beta, y, save_mean_, save_invstd_, rmean, rvar,
                                    momentum_, eps_);
    }
    ++counter(num_batches_tracked_).value;
  } else {
    save_mean_ = save_invstd_ = Tensor();
    ops::batchnorm2d_forward_eval(context(), s, x, gamma, beta, rmean, rvar, y, eps_, fused_relu_);
  }
  x_ = keeps_for_backward(mode) ? x : Tensor();
  y_ = fused_relu_ && keeps_for_backward(mode) ? y : Tensor();
  last_output_data_ = y.raw_data();
  return y;
}

Tensor BatchNorm2d::backward_impl(const Tensor& dy, Mode mode) {
  const BatchNorm2dShape s = geometry(x_.shape());
  Tensor dx = needs_input_grad() ? new_input_grad() : Tensor();
  const Tensor& gamma = param(weight_).value;
  const Tensor& dgamma = param(weight_).grad;
  const Tensor& dbeta = param(bias_).grad;
  // Fused: dy is the ReLU's output gradient (the pass-through ReLU returned it unchanged); the kernels mask
  // it by the fused output y_ > 0, which is ReLU's backward.
  if (mode == Mode::Train && fused_relu_) {
    ops::batchnorm2d_backward_training(context(), s, x_, gamma, save_mean_, save_invstd_, dy, dx, dgamma,
                                       dbeta, y_);
  } else if (mode == Mode::Train) {
    statistics_->backward_training(context(), s, x_, gamma, save_mean_, save_invstd_, dy, dx, dgamma, dbeta);
  } else {  // eval: the running statistics are constants, nothing to synchronize
    ops::batchnorm2d_backward_eval(context(), s, x_, gamma, buffer(running_mean_).value,
                                   buffer(running_var_).value, dy, dx, dgamma, dbeta, eps_, y_);
  }
  x_ = save_mean_ = save_invstd_ = y_ = Tensor();
  return dx;
}

}  // namespace engine::layers
