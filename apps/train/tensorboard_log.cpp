#include "apps/train/tensorboard_log.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.h"

#if ENGINE_HAVE_TENSORBOARD
#include "apps/pictures/data_grid.h"
#include "apps/tensorboard/event_writer.h"
#endif

namespace engine::apps {

#if ENGINE_HAVE_TENSORBOARD

namespace {

// A parameter's values on the host as float32 (parameters are float32, or float64 in the reference's tests).
std::vector<float> host_floats(const Tensor& t, void* stream) {
  const Tensor host = t.to(Device::cpu(), stream);
  if (host.dtype() == DType::F64) {
    const double* p = host.data<double>();
    std::vector<float> out(static_cast<std::size_t>(host.numel()));
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>(p[i]);
    return out;
  }
  ENGINE_CHECK(host.dtype() == DType::F32, "--tensorboard: a parameter of dtype {}",
               dtype_name(host.dtype()));
  const float* p = host.data<float>();
  return std::vector<float>(p, p + host.numel());
}

}  // namespace

TensorboardLog::TensorboardLog(const std::string& dir, std::int64_t first_step, std::int64_t every_steps)
    : writer_(std::make_unique<tensorboard::EventWriter>(dir)), every_(every_steps) {
  ENGINE_CHECK(every_steps > 0, "--tensorboard-every {}: must be at least 1", every_steps);
  if (first_step > 1) writer_->start_at(first_step);
}

TensorboardLog::~TensorboardLog() = default;

void TensorboardLog::samples(const data::Batch& batch, const std::vector<float>& mean,
                             const std::vector<float>& std, const std::vector<std::string>& class_names,
                             void* stream) {
  if (batch.size() == 0) return;
  const Tensor images = batch.images.to(Device::cpu(), stream),
               labels = batch.labels.to(Device::cpu(), stream);
  writer_->image("train/samples",
                 make_sample_grid(batch_as_dataset(images, labels, mean, std, class_names, 32), 4, 8), 0);
  writer_->flush();
}

void TensorboardLog::step_losses(std::int64_t first_step, std::span<const float> losses) {
  for (std::size_t i = 0; i < losses.size(); ++i) {
    const std::int64_t step = first_step + static_cast<std::int64_t>(i);
    if (step % every_ == 0) writer_->scalar("train/step_loss", static_cast<double>(losses[i]), step);
  }
}

void TensorboardLog::epoch(const EpochMetrics& m, std::int64_t step, const layers::Model& model) {
  writer_->scalar("train/loss", m.train_loss, step);
  writer_->scalar("train/accuracy", m.train_acc, step);
  writer_->scalar("test/loss", m.test_loss, step);
  writer_->scalar("test/accuracy", m.test_acc, step);
  writer_->scalar("learning_rate", m.lr, step);
  writer_->scalar("images_per_second", m.images_per_second, step);
  writer_->scalar("memory_mb", m.memory_mb, step);
  writer_->scalar("epoch", static_cast<double>(m.epoch), step);
  void* stream = model.context().stream;
  for (const layers::Parameter& p : model.parameters()) {
    writer_->histogram("weights/" + p.name, host_floats(p.value, stream), step);
    const std::vector<float> grad = host_floats(p.grad, stream);
    double squares = 0.0;
    for (const float g : grad) squares += static_cast<double>(g) * static_cast<double>(g);
    writer_->histogram("gradients/" + p.name, grad, step);
    writer_->scalar("gradient_norm/" + p.name, std::sqrt(squares), step);
  }
  writer_->flush();
}

#else

TensorboardLog::TensorboardLog(const std::string& dir, std::int64_t, std::int64_t) {
  ENGINE_FAIL(
      "--tensorboard {}: this build has no TensorBoard support (it needs Debian's libprotobuf-dev and "
      "protobuf-compiler at configure time; scripts/install-deps.sh installs them)",
      dir);
}

TensorboardLog::~TensorboardLog() = default;
void TensorboardLog::samples(const data::Batch&, const std::vector<float>&, const std::vector<float>&,
                             const std::vector<std::string>&, void*) {}
void TensorboardLog::step_losses(std::int64_t, std::span<const float>) {}
void TensorboardLog::epoch(const EpochMetrics&, std::int64_t, const layers::Model&) {}

#endif

}  // namespace engine::apps
