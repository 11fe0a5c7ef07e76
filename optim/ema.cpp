#include "optim/ema.h"

#include <cmath>

#include "core/error.h"
#include "kernels/ops/ema.h"

namespace engine::optim {

void accumulate_average(const ExecutionContext& ctx, const Tensor& average, const Tensor& x, double rho) {
  ops::ema_update(ctx, rho, average, x, false);
}

void EmaConfig::validate() const {
  ENGINE_CHECK(every_steps >= 1, "--ema-every {}: must be >= 1", every_steps);
  ENGINE_CHECK(start_step >= 0, "--ema-start-epoch: the first EMA step {} must be >= 0", start_step);
  ENGINE_CHECK(decay_base >= 0.0 && decay_base <= 1.0, "--ema-decay {}: must be in [0, 1]", decay_base);
  ENGINE_CHECK(std::isfinite(decay_pow) && decay_pow >= 0.0, "--ema-decay-pow {}: must be >= 0", decay_pow);
  ENGINE_CHECK(total_steps >= 1, "WeightAverage: total steps {} must be >= 1", total_steps);
}

WeightAverage::WeightAverage(layers::Model& model, const EmaConfig& config) : model_(model), config_(config) {
  ENGINE_CHECK(model.finalized(), "WeightAverage: model '{}' is not finalized", model.name());
  config_.validate();
  void* stream = model.context().stream;
  const Tensor& p = model.flat_parameters();
  params_ = Tensor::zeros(p.shape(), p.dtype(), p.device(), stream);
  const Tensor& b = model.flat_buffers();
  if (b.defined() && b.numel() > 0) buffers_ = Tensor::zeros(b.shape(), b.dtype(), b.device(), stream);
}

double WeightAverage::decay_at(std::int64_t steps) const {
  const double progress = static_cast<double>(steps) / static_cast<double>(config_.total_steps);
  const double rho = std::pow(config_.decay_base, static_cast<double>(config_.every_steps)) *
                     std::pow(progress, config_.decay_pow);
  return std::min(rho, 1.0);  // steps beyond total_steps (a longer run than planned) keep rho <= 1
}

void WeightAverage::set_steps(std::int64_t start_step, std::int64_t total_steps) {
  EmaConfig c = config_;
  c.start_step = start_step;
  c.total_steps = total_steps;
  c.validate();
  config_ = c;
}

void WeightAverage::start() {
  void* stream = model_.context().stream;
  params_.copy_from(model_.flat_parameters(), stream);
  if (buffers_.defined()) buffers_.copy_from(model_.flat_buffers(), stream);
  initialized_ = true;
}

void WeightAverage::update(double rho, bool copy_back) {
  if (!initialized_) {
    start();
    return;
  }
  const ExecutionContext& ctx = model_.context();
  ops::ema_update(ctx, rho, params_, model_.flat_parameters(), copy_back);
  if (copy_back) model_.parameters_written();  // bf16 autocast: the mirror follows the written weights
  if (buffers_.defined()) ops::ema_update(ctx, rho, buffers_, model_.flat_buffers(), copy_back);
}

bool WeightAverage::after_step(std::int64_t steps) {
  // Step `steps` (1-based) was taken in an epoch >= the start epoch iff steps > start_step.
  if (steps <= config_.start_step || steps % config_.every_steps != 0) return false;
  update(decay_at(steps), config_.lookahead);
  return true;
}

void WeightAverage::finish_epoch() {
  if (initialized_) update(1.0, true);
}

void WeightAverage::swap_with_weights() {
  ENGINE_CHECK(initialized_, "WeightAverage: no average to swap in yet");
  void* stream = model_.context().stream;
  const auto swap = [stream](const Tensor& a, const Tensor& b) {
    Tensor tmp = Tensor::empty(a.shape(), a.dtype(), a.device(), stream);
    tmp.copy_from(a, stream);
    Tensor(a).copy_from(b, stream);
    Tensor(b).copy_from(tmp, stream);
  };
  swap(params_, model_.flat_parameters());
  model_.parameters_written();
  if (buffers_.defined()) swap(buffers_, model_.flat_buffers());
}

}  // namespace engine::optim
