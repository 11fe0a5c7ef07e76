// The host side of a replayed CUDA-graph step (apps/train/training_graph.h): what one eager step advances on
// the host (dropout offset, BatchNorm's num_batches_tracked, the optimizer's step count) is measured, applied
// after each replay instead of running the step's host code, and restored after a failed capture. Checked
// here against real eager steps of cnn3 (three BatchNorms, one Dropout) on the CPU.
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "apps/train/training_graph.h"
#include "core/error.h"
#include "layers/models.h"
#include "layers/softmax_cross_entropy.h"
#include "optim/sgd.h"
#include "tests/cpu/data_test_util.h"

namespace engine::apps {
namespace {

struct CpuRun {
  layers::Model model = layers::build_model("cnn3", 3, 10, 32, 32);
  layers::SoftmaxCrossEntropy loss;
  std::unique_ptr<optim::Sgd> sgd;
  Tensor x = Tensor::zeros({2, 3, 32, 32}, DType::F32);
  Tensor y = Tensor::zeros({2}, DType::I32);

  CpuRun() {
    layers::ExecutionContext ctx;
    model.finalize(ctx, 3);
    model.context().dropout_offset = 40;
    sgd = std::make_unique<optim::Sgd>(model, optim::SgdConfig{.momentum = 0.9});
    float* px = x.data<float>();
    for (std::int64_t i = 0; i < x.numel(); ++i) px[i] = static_cast<float>((i * 37) % 101) / 101.0f - 0.5f;
    y.data<std::int32_t>()[1] = 3;
  }
  void step() {
    const Tensor logits = model.forward(x, layers::Mode::Train);
    (void)loss.forward(model.context(), logits, y);
    model.backward(loss.backward());
    sgd->step(0.01);
  }
  HostStepMark mark() const { return mark_host_state(model, *sgd); }
};

void expect_same(const HostStepMark& a, const HostStepMark& b, const std::string& where) {
  EXPECT_EQ(a.dropout_offset, b.dropout_offset) << where;
  EXPECT_EQ(a.counters, b.counters) << where;
  EXPECT_EQ(a.optimizer_steps, b.optimizer_steps) << where;
}

TEST(TrainingGraphHost, TheAdvanceAppliedAfterReplaysEqualsEagerStepsHostState) {
  CpuRun eager, replayed;
  const HostStepMark before = eager.mark();
  ASSERT_EQ(before.counters.size(), 3u) << "cnn3: three BatchNorms, each with num_batches_tracked";
  eager.step();  // the step the TrainingGraph captures: its host code runs once
  replayed.step();
  const HostStepAdvance advance = host_advance(before, eager.mark());
  EXPECT_EQ(advance.dropout_forwards, 1u);
  EXPECT_EQ(advance.optimizer_steps, 1);
  EXPECT_EQ(advance.counters, (std::vector<std::int64_t>{1, 1, 1}));
  for (int i = 0; i < 3; ++i) {  // eager steps against replays (no host code: the advance instead)
    eager.step();
    apply_host_advance(advance, replayed.model, *replayed.sgd);
    expect_same(replayed.mark(), eager.mark(), "after replay " + std::to_string(i + 1));
  }
  EXPECT_EQ(eager.model.context().dropout_offset, 44u);
}

TEST(TrainingGraphHost, AFailedCaptureRestoresTheStepsStart) {
  CpuRun run;
  run.step();
  const HostStepMark start = run.mark();
  run.step();  // a capture runs the step's host code, then fails: everything goes back
  restore_host_state(start, run.model, *run.sgd);
  expect_same(run.mark(), start, "restored");
}

TEST(TrainingGraphHost, RefusesAnAdvanceThatGoesBackOrDoesNotFit) {
  CpuRun run;
  const HostStepMark before = run.mark();
  run.step();
  const HostStepMark after = run.mark();
  EXPECT_DATA_ERROR(host_advance(after, before), "went back");
  HostStepMark fewer = after;
  fewer.counters.pop_back();
  EXPECT_DATA_ERROR(host_advance(before, fewer), "3 counters before, 2 after");
  HostStepAdvance wrong = host_advance(before, after);
  wrong.counters.push_back(1);
  EXPECT_DATA_ERROR(apply_host_advance(wrong, run.model, *run.sgd), "4 counters measured, the model has 3");
}

}  // namespace
}  // namespace engine::apps
