// The device step state's contents (apps/step_state.h): which value each field takes at a step, the same
// values the eager loop passes as arguments today (data::Loader::next's batch offset, Trainer::train_epoch's
// loss slot, Dropout's offsets), and the refusals of the learning rate in device memory on the CPU.
#include "apps/step_state.h"

#include <cmath>
#include <limits>
#include <string>

#include <gtest/gtest.h>

#include "apps/step_state_buffer.h"
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
