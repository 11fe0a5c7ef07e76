// The device step state's contents (apps/train/step_state.h): which value each field takes at a step, the
// same values the eager loop passes as arguments today (data::Loader::next's batch offset,
// Trainer::train_epoch's loss slot, Dropout's offsets), and the refusals of the learning rate in device
// memory on the CPU.
#include "apps/train/step_state.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "apps/train/step_state_buffer.h"
#include "core/error.h"
#include "kernels/ops/sgd.h"
#include "layers/models.h"
#include "optim/sgd.h"

namespace engine::apps {
namespace {

TEST(StepState, FieldsFollowTheLoopsPosition) {
  StepPosition p;
  p.epoch = 3;
  p.loader_batch = 5;
  p.batches_before = 7;  // a mid-epoch resume: the loader's batch 0 is the epoch's batch 7
  p.batch_size = 128;
  p.optimizer_steps = 1234;
  p.dropout_offset = 99;
  p.lr = 0.0375;
  const StepState s = make_step_state(p);
  EXPECT_EQ(s.lr, 0.0375);  // the very double the eager SGD gets
  EXPECT_EQ(s.optimizer_step, 1234);
  EXPECT_EQ(s.dropout_offset, 99u);
  EXPECT_EQ(s.augment_epoch, 3u);
  EXPECT_EQ(s.batch_offset, 5 * 128);  // Loader::next: offset = k * batch_size
  EXPECT_EQ(s.loss_slot, 7 + 5);       // Trainer: step_losses_[steps], steps counted from the epoch's start
}

TEST(StepState, ConsecutiveStepsAdvanceAsTheEagerLoopDoes) {
  StepPosition p;
  p.batch_size = 64;
  p.lr = 0.1;
  const std::uint64_t dropouts_per_step = 2;  // e.g. a model with two Dropout layers
  std::uint64_t offset = 10;
  for (std::int64_t k = 0; k < 4; ++k) {
    p.loader_batch = k;
    p.optimizer_steps = k;
    p.dropout_offset = offset;
    const StepState s = make_step_state(p);
    EXPECT_EQ(s.batch_offset, k * 64);
    EXPECT_EQ(s.loss_slot, k);
    EXPECT_EQ(s.dropout_offset, 10 + dropouts_per_step * static_cast<std::uint64_t>(k));
    offset = dropout_offset_after(s, dropouts_per_step);  // what dropout_offset++ twice leaves
  }
  EXPECT_EQ(offset, 18u);
}

// The Trainer's loop with graphs (apps/train/trainer.cpp): per epoch, loader batches k = 0.. of full batches
// (the partial one dropped), first = the batches a mid-epoch resume skipped; the optimizer step and the
// dropout offset run on across epochs, the batch offset and loss slot start again. Every state is inside the
// epoch's arrays (the index list on the device, the step losses), and no two steps of an epoch share a slot.
TEST(StepState, StepsAcrossEpochsAndAResumeStayInsideTheEpochsArrays) {
  const std::int64_t samples = 100, batch = 16;  // 6 full batches, 4 samples dropped
  const std::int64_t full = samples / batch;
  const std::uint64_t dropouts_per_step = 2;
  std::int64_t optimizer_steps = 0;
  std::uint64_t offset = 0;
  std::int64_t position = 3 * batch;  // the first epoch resumes after 3 batches
  for (std::uint64_t epoch = 4; epoch < 7; ++epoch) {
    const std::int64_t first = position / batch;
    const std::int64_t loader_batches = (samples - position) / batch;
    std::vector<bool> slot_used(static_cast<std::size_t>(full), false);
    for (std::int64_t k = 0; k < loader_batches; ++k) {
      StepPosition p;
      p.epoch = epoch;
      p.loader_batch = k;
      p.batches_before = first;
      p.batch_size = batch;
      p.optimizer_steps = optimizer_steps;
      p.dropout_offset = offset;
      p.lr = 0.1;
      const StepState s = make_step_state(p);
      EXPECT_EQ(s.augment_epoch, epoch);
      EXPECT_EQ(s.optimizer_step, optimizer_steps);
      // The batch lies inside the list the loader copied to the device (the rest of the epoch's after a
      // resume).
      EXPECT_GE(s.batch_offset, 0);
      EXPECT_LE(s.batch_offset + batch, samples - position);
      ASSERT_GE(s.loss_slot, 0);
      ASSERT_LT(s.loss_slot, full);
      EXPECT_FALSE(slot_used[static_cast<std::size_t>(s.loss_slot)]) << "slot " << s.loss_slot << " twice";
      slot_used[static_cast<std::size_t>(s.loss_slot)] = true;
      offset = dropout_offset_after(s, dropouts_per_step);  // what the host sets after a replay
      ++optimizer_steps;
    }
    // The resumed epoch fills the slots after the skipped ones; a whole epoch fills them all.
    for (std::int64_t i = 0; i < full; ++i) EXPECT_EQ(slot_used[static_cast<std::size_t>(i)], i >= first);
    position = 0;
  }
  EXPECT_EQ(optimizer_steps, 3 + 6 + 6);
  EXPECT_EQ(offset, dropouts_per_step * 15);
}

TEST(StepState, RefusesWhatTheStepWouldRefuse) {
  auto message_of = [](const StepPosition& p) {
    try {
      (void)make_step_state(p);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  StepPosition p;
  p.batch_size = 32;
  p.lr = std::numeric_limits<double>::quiet_NaN();
  EXPECT_NE(message_of(p).find("learning rate nan"), std::string::npos) << message_of(p);
  p.lr = -0.1;
  EXPECT_NE(message_of(p).find("learning rate -0.1"), std::string::npos) << message_of(p);
  p.lr = 0.1;
  p.batch_size = 0;
  EXPECT_NE(message_of(p).find("of size 0"), std::string::npos) << message_of(p);
  p.batch_size = 32;
  p.loader_batch = -1;
  EXPECT_NE(message_of(p).find("batch -1"), std::string::npos) << message_of(p);
}

TEST(StepState, ALearningRateInDeviceMemoryIsRefusedOnTheCpu) {
  layers::Model model = layers::build_model("mnist_cnn", 1, 10, 28, 28);
  layers::ExecutionContext ctx;
  model.finalize(ctx, 1);
  optim::Sgd sgd(model, {.momentum = 0.9});
  const double lr = 0.1;
  try {
    sgd.set_device_lr(&lr);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("needs a model on a CUDA device"), std::string::npos) << e.what();
  }
  sgd.set_device_lr(nullptr);  // back to the argument: allowed everywhere
  sgd.step(0.1);
  EXPECT_EQ(sgd.steps(), 1);
  try {
    ops::sgd_step(model.context(), {.lr = 0.1}, model.flat_parameters(), model.flat_gradients(), Tensor(),
                  false, {}, Tensor(), /*bf16_mirror=*/Tensor(), &lr);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("needs CUDA parameters"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace engine::apps
