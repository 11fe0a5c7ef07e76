#include "layers/activation.h"

#include <cmath>

#include "core/error.h"
#include "kernels/ops/activation.h"

namespace engine::layers {

Activation::Activation(const ActivationParams& params) : params_(params) {
  const std::string_view name = activation_name(params.kind);
  ENGINE_CHECK(!std::isnan(params.alpha) && !std::isnan(params.beta),
               "{}: a parameter is NaN (alpha {}, beta {})", name, params.alpha, params.beta);
  if (params.kind == ActivationKind::Clip) {
    ENGINE_CHECK(params.alpha <= params.beta, "Clip: min {} is above max {}", params.alpha, params.beta);
  } else if (params.kind == ActivationKind::HardSigmoid || params.kind == ActivationKind::LeakyRelu) {
    ENGINE_CHECK(std::isfinite(params.alpha) && std::isfinite(params.beta),
                 "{}: alpha {} and beta {} must be finite", name, params.alpha, params.beta);
  }
}

Tensor Activation::forward_impl(const Tensor& x, Mode mode) {
  Tensor y = new_tensor(x.shape(), x.dtype());
  ops::activation_forward(context(), params_, x, y);
  // Sigmoid's and Tanh's backward read the output (kernels/activation_kind.h), the others the input.
  saved_ = keeps_for_backward(mode) ? (activation_backward_reads_output(params_.kind) ? y : x) : Tensor();
  return y;
}

Tensor Activation::backward_impl(const Tensor& dy, Mode) {
  Tensor dx;
  if (needs_input_grad()) {
    dx = new_input_grad();
    ops::activation_backward(context(), params_, saved_, dy, dx);
  }
  saved_ = Tensor();
  return dx;
}

}  // namespace engine::layers
