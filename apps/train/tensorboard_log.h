#pragma once
// --tensorboard DIR: what rank 0 writes for TensorBoard (apps/tensorboard/event_writer.h). Once: a grid of
// the first batch's training samples, augmented as the model sees them. Every --tensorboard-every N steps:
// the training loss. Per epoch: the log line's numbers (loss and accuracy for training and test, learning
// rate, images/s, memory), a histogram of each parameter tensor's weights and of its gradients, and each
// one's gradient norm. The x axis is the batch count (the
// optimizer step with --accumulate 1). A resumed run opens a new file in DIR that starts where the
// checkpoint left off, so TensorBoard drops what the interrupted run logged after it: no step repeated, none
// lost. Built without protobuf, the constructor throws naming the packages.

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "apps/train/epoch_log.h"
#include "data/loader.h"
#include "layers/model.h"

namespace engine::tensorboard {
class EventWriter;
}

namespace engine::apps {

class TensorboardLog {
 public:
  // `first_step`: the step this run logs first (1 for a new run). Throws engine::Error naming DIR when it
  // cannot be written.
  TensorboardLog(const std::string& dir, std::int64_t first_step, std::int64_t every_steps);
  ~TensorboardLog();
  TensorboardLog(const TensorboardLog&) = delete;
  TensorboardLog& operator=(const TensorboardLog&) = delete;

  // Once: a grid of up to 32 images of the first training batch as the model sees them, augmented (the
  // normalization with `mean` and `std` undone), captioned with their classes. `stream`: the batch's.
  void samples(const data::Batch& batch, const std::vector<float>& mean, const std::vector<float>& std,
               const std::vector<std::string>& class_names, void* stream);
  // The losses of steps first_step, first_step + 1, ...: those on the --tensorboard-every grid are written.
  void step_losses(std::int64_t first_step, std::span<const float> losses);
  void epoch(const EpochMetrics& m, std::int64_t step, const layers::Model& model);

 private:
  std::unique_ptr<tensorboard::EventWriter> writer_;
  std::int64_t every_;
};

}  // namespace engine::apps
