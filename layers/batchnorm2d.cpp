#include "layers/batchnorm2d.h"

#include <cmath>
#include <type_traits>

#include "kernels/cpu/batchnorm2d.h"
#include "kernels/cpu_fast/batchnorm2d.h"
#include "layers/dispatch.h"

#if ENGINE_HAVE_CUDA
#include "kernels/cuda/batchnorm2d.h"
#endif

namespace engine::layers {

BatchNorm2d::BatchNorm2d(int num_features, double eps, double momentum)
    : num_features_(num_features), eps_(eps), momentum_(momentum) {
  LAYER_CHECK(num_features > 0, "num_features must be positive, got {}", num_features);
  LAYER_CHECK(eps > 0.0 && std::isfinite(eps), "eps must be positive, got {}", eps);
  LAYER_CHECK(momentum >= 0.0 && momentum <= 1.0, "momentum must be in [0, 1], got {}", momentum);
  weight_ = add_parameter("weight", {num_features}, ParamInit::Ones);
  bias_ = add_parameter("bias", {num_features}, ParamInit::Zeros);
  running_mean_ = add_buffer("running_mean", {num_features}, 0.0);
  running_var_ = add_buffer("running_var", {num_features}, 1.0);
  num_batches_tracked_ = add_counter("num_batches_tracked");
}

namespace {

cpu::BatchNorm2dShape geometry(const Shape& x) {
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
  const cpu::BatchNorm2dShape s = geometry(x.shape());
  if (mode == Mode::Train) {
    LAYER_CHECK(s.count() > 1, "expected more than 1 value per channel when training, got an input {}",
                x.str());
  }
  Tensor y = new_tensor(x.shape());
  const Tensor& gamma = param(weight_).value;
  const Tensor& beta = param(bias_).value;
  const Tensor& rmean = buffer(running_mean_).value;
  const Tensor& rvar = buffer(running_var_).value;
  if (mode == Mode::Train) {
    save_mean_ = new_tensor({num_features_});
    save_invstd_ = new_tensor({num_features_});
  } else {
    save_mean_ = save_invstd_ = Tensor();
  }
  if (x.is_cuda()) {
#if ENGINE_HAVE_CUDA
    const cudaStream_t stream = detail::cuda_stream(context());
    if (mode == Mode::Train) {
      cuda::batchnorm2d_forward_training(stream, s, x.data<float>(), gamma.data<float>(), beta.data<float>(),
                                         y.data<float>(), save_mean_.data<float>(),
                                         save_invstd_.data<float>(), rmean.data<float>(), rvar.data<float>(),
                                         momentum_, eps_);
    } else {
      cuda::batchnorm2d_forward_eval(stream, s, x.data<float>(), gamma.data<float>(), beta.data<float>(),
                                     rmean.data<float>(), rvar.data<float>(), y.data<float>(), eps_);
    }
#else
    detail::fail_without_cuda(*this);
#endif
  } else {
    detail::with_cpu_scalar(*this, x.dtype(), [&]<typename T>() {
      if constexpr (std::is_same_v<T, float>) {  // float32 training: the fast path
        if (mode == Mode::Train) {
          cpu_fast::batchnorm2d_forward_training(s, x.data<T>(), gamma.data<T>(), beta.data<T>(), y.data<T>(),
                                                 save_mean_.data<T>(), save_invstd_.data<T>(),
                                                 rmean.data<T>(), rvar.data<T>(), momentum_, eps_);
          return;
        }
      }
      if (mode == Mode::Train) {
        cpu::batchnorm2d_forward_training<T>(s, x.data<T>(), gamma.data<T>(), beta.data<T>(), y.data<T>(),
                                             save_mean_.data<T>(), save_invstd_.data<T>(), rmean.data<T>(),
                                             rvar.data<T>(), momentum_, eps_);
      } else {
        cpu::batchnorm2d_forward_eval<T>(s, x.data<T>(), gamma.data<T>(), beta.data<T>(), rmean.data<T>(),
                                         rvar.data<T>(), y.data<T>(), eps_);
      }
    });
  }
  if (mode == Mode::Train) ++counter(num_batches_tracked_).value;
  x_ = keeps_for_backward(mode) ? x : Tensor();
  return y;
}

Tensor BatchNorm2d::backward_impl(const Tensor& dy, Mode mode) {
  const cpu::BatchNorm2dShape s = geometry(x_.shape());
  Tensor dx = needs_input_grad() ? new_tensor(x_.shape()) : Tensor();
  const Tensor& gamma = param(weight_).value;
  const Tensor& dgamma = param(weight_).grad;
  const Tensor& dbeta = param(bias_).grad;
  if (dy.is_cuda()) {
#if ENGINE_HAVE_CUDA
    const cudaStream_t stream = detail::cuda_stream(context());
    float* dx_data = dx.defined() ? dx.data<float>() : nullptr;
    if (mode == Mode::Train) {
      cuda::batchnorm2d_backward_training(
          stream, s, x_.data<float>(), gamma.data<float>(), save_mean_.data<float>(),
          save_invstd_.data<float>(), dy.data<float>(), dx_data, dgamma.data<float>(), dbeta.data<float>());
    } else {
      cuda::batchnorm2d_backward_eval(stream, s, x_.data<float>(), gamma.data<float>(),
                                      buffer(running_mean_).value.data<float>(),
                                      buffer(running_var_).value.data<float>(), dy.data<float>(), dx_data,
                                      dgamma.data<float>(), dbeta.data<float>(), eps_);
    }
#else
    detail::fail_without_cuda(*this);
#endif
  } else {
    detail::with_cpu_scalar(*this, dy.dtype(), [&]<typename T>() {
      T* dx_data = dx.defined() ? dx.data<T>() : nullptr;
      if constexpr (std::is_same_v<T, float>) {
        if (mode == Mode::Train) {
          cpu_fast::batchnorm2d_backward_training(s, x_.data<T>(), gamma.data<T>(), save_mean_.data<T>(),
                                                  save_invstd_.data<T>(), dy.data<T>(), dx_data,
                                                  dgamma.data<T>(), dbeta.data<T>());
          return;
        }
      }
      if (mode == Mode::Train) {
        cpu::batchnorm2d_backward_training<T>(s, x_.data<T>(), gamma.data<T>(), save_mean_.data<T>(),
                                              save_invstd_.data<T>(), dy.data<T>(), dx_data, dgamma.data<T>(),
                                              dbeta.data<T>());
      } else {
        cpu::batchnorm2d_backward_eval<T>(s, x_.data<T>(), gamma.data<T>(),
                                          buffer(running_mean_).value.data<T>(),
                                          buffer(running_var_).value.data<T>(), dy.data<T>(), dx_data,
                                          dgamma.data<T>(), dbeta.data<T>(), eps_);
      }
    });
  }
  x_ = save_mean_ = save_invstd_ = Tensor();
  return dx;
}

}  // namespace engine::layers
