#include "dist/sync_batchnorm_layer.h"

#include "dist/sync_batchnorm.h"
#include "kernels/cpu/batchnorm2d.h"
#if ENGINE_HAVE_CUDA
#include "kernels/cuda/batchnorm2d.h"
#endif

namespace engine::dist {

SyncBatchNorm2d::SyncBatchNorm2d(ProcessGroup& pg, int num_features, double eps, double momentum)
    : pg_(pg), num_features_(num_features), eps_(eps), momentum_(momentum) {
  LAYER_CHECK(num_features > 0, "num_features must be positive, got {}", num_features);
  weight_ = add_parameter("weight", {num_features}, layers::ParamInit::Ones);
  bias_ = add_parameter("bias", {num_features}, layers::ParamInit::Zeros);
  running_mean_ = add_buffer("running_mean", {num_features}, 0.0);
  running_var_ = add_buffer("running_var", {num_features}, 1.0);
  num_batches_tracked_ = add_counter("num_batches_tracked");
}

Shape SyncBatchNorm2d::output_shape_impl(const Shape& in) const {
  LAYER_CHECK(in.size() == 4 && in[1] == num_features_, "expects an input [N, {}, H, W], got {}",
              num_features_, shape_str(in));
  return in;
}

Tensor SyncBatchNorm2d::forward_impl(const Tensor& x, layers::Mode mode) {
  Tensor y = new_tensor(x.shape());
  const Tensor& gamma = param(weight_).value;
  const Tensor& beta = param(bias_).value;
  const Tensor& rmean = buffer(running_mean_).value;
  const Tensor& rvar = buffer(running_var_).value;
  if (mode == layers::Mode::Train) {
    save_mean_ = new_tensor({num_features_});
    save_invstd_ = new_tensor({num_features_});
    sync_batchnorm_forward_training(pg_, x, gamma, beta, y, save_mean_, save_invstd_, rmean, rvar, momentum_,
                                    eps_, context().stream);
    ++counter(num_batches_tracked_).value;
  } else {  // eval: plain batch norm with the running statistics, the kernels BatchNorm2d uses
    save_mean_ = save_invstd_ = Tensor();  // a training forward's, which no backward will use now
    const cpu::BatchNorm2dShape s{static_cast<int>(x.dim(0)), static_cast<int>(x.dim(1)),
                                  static_cast<int>(x.dim(2)), static_cast<int>(x.dim(3))};
    if (x.is_cuda()) {
#if ENGINE_HAVE_CUDA
      LAYER_CHECK(x.dtype() == DType::F32, "CUDA runs float32, not {}", dtype_name(x.dtype()));
      cuda::batchnorm2d_forward_eval(static_cast<cudaStream_t>(context().stream), s, x.data<float>(),
                                     gamma.data<float>(), beta.data<float>(), rmean.data<float>(),
                                     rvar.data<float>(), y.data<float>(), eps_);
#endif
    } else if (x.dtype() == DType::F64) {
      cpu::batchnorm2d_forward_eval<double>(s, x.data<double>(), gamma.data<double>(), beta.data<double>(),
                                            rmean.data<double>(), rvar.data<double>(), y.data<double>(),
                                            eps_);
    } else {
      cpu::batchnorm2d_forward_eval<float>(s, x.data<float>(), gamma.data<float>(), beta.data<float>(),
                                           rmean.data<float>(), rvar.data<float>(), y.data<float>(), eps_);
    }
  }
  x_ = layers::keeps_for_backward(mode) ? x : Tensor();  // Inference keeps nothing
  return y;
}

Tensor SyncBatchNorm2d::backward_impl(const Tensor& dy, layers::Mode mode) {
  LAYER_CHECK(mode == layers::Mode::Train, "backward of an eval-mode forward is not supported");
  Tensor dx = needs_input_grad() ? new_tensor(x_.shape()) : Tensor();
  sync_batchnorm_backward_training(pg_, x_, param(weight_).value, save_mean_, save_invstd_, dy, dx,
                                   param(weight_).grad, param(bias_).grad, context().stream);
  x_ = save_mean_ = save_invstd_ = Tensor();
  return dx;
}

}  // namespace engine::dist
