#include "optim/sgd.h"

#include <cmath>
#include <cstring>
#include <utility>

#include "kernels/ops/sgd.h"

namespace engine::optim {

namespace {

cpu::SgdOptions options_for(const SgdConfig& c, double lr) {
  return {.lr = lr,
          .momentum = c.momentum,
          .dampening = c.dampening,
          .weight_decay = c.weight_decay,
          .nesterov = c.nesterov};
}

}  // namespace

Sgd::Sgd(layers::Model& model, const SgdConfig& config) : model_(model), config_(config) {
  ENGINE_CHECK(model.finalized(), "Sgd: model '{}' is not finalized", model.name());
  options_for(config_, 0.0).validate();
  set_groups(std::move(config_.groups));
  if (config_.momentum != 0.0) {
    const Tensor& p = model.flat_parameters();
    momentum_ = Tensor::zeros(p.shape(), p.dtype(), p.device(), model.context().stream);
  }
}

void Sgd::set_groups(std::vector<cpu::SgdGroup> groups) {
  config_.groups = std::move(groups);
  const Tensor& params = model_.flat_parameters();
  tiles_.clear();
  device_tiles_ = Tensor();
  if (config_.groups.empty()) return;
  tiles_ = cpu::tile_sgd_groups(config_.groups, config_.weight_decay, params.numel());
  if (params.is_cuda()) {
    const auto bytes = static_cast<std::int64_t>(tiles_.size() * sizeof(cpu::SgdGroup));
    Tensor host = Tensor::empty({bytes}, DType::U8);
    std::memcpy(host.data<std::uint8_t>(), tiles_.data(), static_cast<std::size_t>(bytes));
    // A new device buffer, queued on the model's stream: a step already queued keeps reading the old one
    // (the caching allocator reuses it only in stream order). `host` is pageable: the copy is complete on
    // return, so it may go.
    device_tiles_ = host.to(params.device(), model_.context().stream);
  }
}

void Sgd::step(double lr) {
  ENGINE_CHECK(std::isfinite(lr) && lr >= 0.0, "Sgd: learning rate {} (must be finite and >= 0)", lr);
  const cpu::SgdOptions options = options_for(config_, lr);
  const Tensor& p = model_.flat_parameters();
  const Tensor& g = model_.flat_gradients();
  const bool first = !has_state_;
  // Under bf16 autocast the same pass writes the model's bf16 mirror (layers/model.h).
  ops::sgd_step(model_.context(), options, p, g, momentum_, first, tiles_, device_tiles_,
                model_.flat_parameters_bf16(), device_lr_);
  if (momentum_.defined()) has_state_ = true;
  ++steps_;
}

void Sgd::set_device_lr(const double* device_lr) {
  ENGINE_CHECK(device_lr == nullptr || model_.flat_parameters().is_cuda(),
               "Sgd: a learning rate in device memory needs a model on a CUDA device, '{}' is on {}",
               model_.name(), model_.flat_parameters().device().str());
  device_lr_ = device_lr;
}

}  // namespace engine::optim
