#include "optim/sgd.h"

#include <cmath>
#include <cstring>

#include "kernels/cpu_fast/sgd.h"

#if ENGINE_HAVE_CUDA
#include "kernels/cuda/sgd.h"
#endif

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
  const Tensor& params = model.flat_parameters();
  if (!config_.groups.empty()) {
    tiles_ = cpu::tile_sgd_groups(config_.groups, config_.weight_decay, params.numel());
    if (params.is_cuda()) {
      const auto bytes = static_cast<std::int64_t>(tiles_.size() * sizeof(cpu::SgdGroup));
      Tensor host = Tensor::empty({bytes}, DType::U8);
      std::memcpy(host.data<std::uint8_t>(), tiles_.data(), static_cast<std::size_t>(bytes));
      device_tiles_ = host.to(params.device(), model.context().stream);
      // `host` is pageable: the copy is complete on return, so it may go.
    }
  }
  if (config_.momentum != 0.0) {
    const Tensor& p = model.flat_parameters();
    momentum_ = Tensor::zeros(p.shape(), p.dtype(), p.device(), model.context().stream);
  }
}

void Sgd::step(double lr) {
  ENGINE_CHECK(std::isfinite(lr) && lr >= 0.0, "Sgd: learning rate {} (must be finite and >= 0)", lr);
  const cpu::SgdOptions options = options_for(config_, lr);
  const Tensor& p = model_.flat_parameters();
  const Tensor& g = model_.flat_gradients();
  const bool first = !has_state_;
  if (p.is_cuda()) {
#if ENGINE_HAVE_CUDA
    float* buffer = momentum_.defined() ? momentum_.data<float>() : nullptr;
    const auto stream = static_cast<cudaStream_t>(model_.context().stream);
    if (tiles_.empty()) {
      cuda::sgd_step(stream, options, p.data<float>(), g.data<float>(), buffer, p.numel(), first);
    } else {
      cuda::sgd_step_tiles(
          stream, options, reinterpret_cast<const cpu::SgdGroup*>(device_tiles_.data<std::uint8_t>()),
          static_cast<int>(tiles_.size()), p.data<float>(), g.data<float>(), buffer, p.numel(), first);
    }
#else
    ENGINE_FAIL("Sgd: a CUDA model in a build without CUDA");
#endif
  } else if (p.dtype() == DType::F64) {
    cpu::sgd_step_groups<double>(options, tiles_, p.data<double>(), g.data<double>(),
                                 momentum_.defined() ? momentum_.data<double>() : nullptr, p.numel(), first);
  } else {
    cpu_fast::sgd_step_groups(options, tiles_, p.data<float>(), g.data<float>(),
                              momentum_.defined() ? momentum_.data<float>() : nullptr, p.numel(), first);
  }
  if (momentum_.defined()) has_state_ = true;
  ++steps_;
}

}  // namespace engine::optim
