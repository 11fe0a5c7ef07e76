#include "apps/train/step_state.h"

#include <cmath>

#include "core/error.h"

namespace engine::apps {

StepState make_step_state(const StepPosition& p) {
  ENGINE_CHECK(
      p.loader_batch >= 0 && p.batches_before >= 0 && p.batch_size > 0 && p.optimizer_steps >= 0,
      "step state: batch {} after {} of size {}, {} optimizer steps (all must be >= 0, the size > 0)",
      p.loader_batch, p.batches_before, p.batch_size, p.optimizer_steps);
  ENGINE_CHECK(std::isfinite(p.lr) && p.lr >= 0.0, "step state: learning rate {} (must be finite and >= 0)",
               p.lr);
  StepState s;
  s.lr = p.lr;
  s.optimizer_step = p.optimizer_steps;
  s.dropout_offset = p.dropout_offset;
  s.augment_epoch = p.epoch;
  // data::Loader::next: the batch's entries start at k * batch_size of the epoch's (remaining) index list.
  s.batch_offset = p.loader_batch * p.batch_size;
  // Trainer::train_epoch: the loss of the epoch's step `steps` (counted from the epoch's start) goes there.
  s.loss_slot = p.batches_before + p.loader_batch;
  return s;
}

std::uint64_t dropout_offset_after(const StepState& s, std::uint64_t dropout_forwards) {
  return s.dropout_offset + dropout_forwards;
}

}  // namespace engine::apps
