// What a run reports (apps/train/run_observer.h), observed in this process through a RecordingObserver: every
// step, evaluation, epoch and checkpoint with its numbers, the numbers agreeing with each other and with
// Trainer::history(); and the epoch line's text, byte for byte (the log users and scripts read).

#include <cmath>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <gtest/gtest.h>

#include "apps/train/epoch_log.h"
#include "apps/train/observers.h"
#include "apps/train/recording_observer.h"
#include "apps/train/trainer.h"
#include "apps/train_flags.h"
#include "tests/cpu/cnn_train_test_util.h"

namespace engine::apps {
namespace {

// cnn_train's flags, parsed and finished as the program does.
TrainConfig parse_config(const std::vector<std::string>& args) {
  TrainConfig config;
  CLI::App app;
  add_train_flags(app, config);
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes them last first
  app.parse(reversed);
  finish_train_config(app, config);
  return config;
}

// A Trainer with the outputs its flags ask for, as cnn_train attaches them, and then a RecordingObserver.
struct RecordedRun {
  std::unique_ptr<Trainer> trainer;
  RecordingObserver* recorded = nullptr;  // owned by the trainer
  double acc = 0.0;                       // run()'s
};

RecordedRun run_recorded(const TrainConfig& config) {
  RecordedRun run;
  run.trainer = std::make_unique<Trainer>(config);
  attach_outputs(*run.trainer);
  auto recorder = std::make_unique<RecordingObserver>();
  run.recorded = recorder.get();
  run.trainer->attach(std::move(recorder));
  run.acc = run.trainer->run();
  return run;
}

TEST(TrainerObservers, EpochLineTextIsByteForByte) {
  EpochMetrics m;
  m.epoch = 3;
  m.batch_size = 128;
  m.steps = 391;
  m.lr = 0.1;
  m.train_loss = 1.09334;
  m.train_acc = 61.204;
  m.test_loss = 1.04171;
  m.test_acc = 63.049;
  m.seconds = 2.134;
  m.images_per_second = 23400.4;
  m.memory_mb = 811.6;
  EXPECT_EQ(
      format_epoch_line("[GPU0]", m),
      "[GPU0] Epoch 3 | Batchsize: 128 | Steps: 391 | LR: 0.1000 | Loss: 1.0933 | Acc: 61.20% | Test Loss: "
      "1.0417 | Test Acc: 63.05% | Time: 2.13s | 23,400 img/s | Mem: 812 MB");
  m.images_per_second = 999.5;  // rounded half away from zero, no separator below 1,000
  m.memory_mb = 0.0;
  const std::string line = format_epoch_line("[CPU]", m);
  EXPECT_EQ(line.substr(line.find("Time:")), "Time: 2.13s | 1,000 img/s | Mem: 0 MB");
}

TEST(TrainerObservers, ARecordingObserverSeesEveryStepEvaluationEpochAndCheckpoint) {
  const std::string root = testing::tiny_folder_dataset("observers_run");  // 48 samples: 6 steps of 8
  const std::string dir = testing::temp_dir("observers_run_ckpt");
  const TrainConfig config = parse_config(testing::with_args(
      {"--cpu", "--save-every-steps", "4"}, testing::tiny_folder_args(root, dir, "cnn3", 8, 2)));
  const RecordedRun run = run_recorded(config);
  const RecordingObserver* r = run.recorded;
  const Trainer* trainer = run.trainer.get();
  const double acc = run.acc;

  EXPECT_EQ(r->run_starts, 1);
  EXPECT_EQ(r->start_epoch, 0);
  EXPECT_EQ(r->start_optimizer_steps, 0);
  EXPECT_FALSE(r->resumed);
  ASSERT_EQ(r->epoch_starts.size(), 2u);
  EXPECT_EQ(r->epoch_starts[1].epoch, 1);
  EXPECT_EQ(r->epoch_starts[1].first, 0);
  EXPECT_EQ(r->epoch_starts[1].batches, 6);
  EXPECT_EQ(r->step_begins, 12);
  ASSERT_EQ(r->steps.size(), 12u);
  for (std::size_t i = 0; i < r->steps.size(); ++i) {
    const RecordingObserver::Step& s = r->steps[i];
    EXPECT_EQ(s.epoch, static_cast<std::int64_t>(i / 6)) << i;
    EXPECT_EQ(s.batch, static_cast<std::int64_t>(i % 6)) << i;
    EXPECT_EQ(s.steps, s.batch + 1) << i;
    EXPECT_EQ(s.samples, 8 * (s.batch + 1)) << i;
    EXPECT_EQ(s.optimizer_steps, static_cast<std::int64_t>(i) + 1) << i;
    EXPECT_TRUE(s.ends_step) << i;
    ASSERT_TRUE(s.loss.has_value()) << "the CPU's loss is on the host: " << i;
    EXPECT_TRUE(std::isfinite(*s.loss)) << i;
  }

  ASSERT_EQ(r->evaluations.size(), 2u);
  ASSERT_EQ(r->epochs.size(), 2u);
  ASSERT_EQ(trainer->history().size(), 2u);
  for (std::size_t e = 0; e < 2; ++e) {
    const EvaluationEnd& ev = r->evaluations[e];
    const RecordingObserver::Epoch& ep = r->epochs[e];
    EXPECT_EQ(ev.epochs_done, static_cast<std::int64_t>(e) + 1);
    EXPECT_EQ(ev.samples, 12) << "every test sample once";
    EXPECT_FALSE(ev.alone);
    EXPECT_EQ(ep.metrics.epoch, static_cast<std::int64_t>(e) + 1);
    EXPECT_EQ(ep.metrics.steps, 6);
    EXPECT_EQ(ep.optimizer_steps, 6 * static_cast<std::int64_t>(e + 1));
    EXPECT_FALSE(ep.stopping);
    EXPECT_EQ(ep.metrics.test_acc, ev.accuracy);
    EXPECT_EQ(ep.metrics.test_loss, ev.loss);
    EXPECT_EQ(ep.metrics.test_acc, trainer->history()[e].test_acc);
    EXPECT_EQ(ep.metrics.train_loss, trainer->history()[e].train_loss);
    // The epoch's step losses are the steps' own, and (equal batches) their mean is the epoch's training
    // loss (summed in float64): each step's is a float32 mean of 8 positive per-sample losses, at most 7
    // roundings of the sum and 1 of the mean, so within 8 * 2^-24 relative, and so is their average.
    ASSERT_EQ(ep.step_losses.size(), 6u);
    double mean = 0.0;
    for (std::size_t s = 0; s < 6; ++s) {
      EXPECT_EQ(ep.step_losses[s], *r->steps[e * 6 + s].loss) << e << " " << s;
      mean += static_cast<double>(ep.step_losses[s]) / 6.0;
    }
    EXPECT_NEAR(mean, ep.metrics.train_loss, 8 * std::ldexp(std::abs(mean), -24)) << e;
  }

  // --save-every-steps 4: mid-epoch at optimizer steps 4 and 8 (12 ends epoch 2); the last epoch at the end.
  ASSERT_EQ(r->checkpoints.size(), 3u);
  EXPECT_EQ(r->checkpoints[0].path, dir + "/step4.safetensors");
  EXPECT_TRUE(r->checkpoints[0].mid_epoch);
  EXPECT_EQ(r->checkpoints[0].epochs_done, 0);
  EXPECT_EQ(r->checkpoints[1].path, dir + "/step8.safetensors");
  EXPECT_EQ(r->checkpoints[1].epochs_done, 1);
  EXPECT_EQ(r->checkpoints[2].path, dir + "/epoch2.safetensors");
  EXPECT_FALSE(r->checkpoints[2].mid_epoch);
  EXPECT_EQ(r->checkpoints[2].optimizer_steps, 12);
  EXPECT_TRUE(std::filesystem::exists(dir + "/epoch2.safetensors"));
  EXPECT_FALSE(std::filesystem::exists(dir + "/step8.safetensors")) << "superseded by the epoch's";
  EXPECT_TRUE(r->stops.empty());

  ASSERT_TRUE(r->end.has_value());
  EXPECT_TRUE(r->end->completed);
  EXPECT_EQ(r->end->test_acc, acc);
  EXPECT_EQ(acc, r->evaluations.back().accuracy);
}

TEST(TrainerObservers, EvalOnlyReportsOneEvaluationAloneAndNoEpoch) {
  const std::string root = testing::tiny_folder_dataset("observers_eval");
  const std::string dir = testing::temp_dir("observers_eval_ckpt");
  TrainConfig train =
      parse_config(testing::with_args({"--cpu"}, testing::tiny_folder_args(root, dir, "cnn3", 8, 1)));
  Trainer first(train);
  attach_outputs(first);  // the checkpoint policy
  first.run();
  const TrainConfig eval =
      parse_config(testing::with_args({"--cpu", "--eval-only", dir + "/epoch1.safetensors"},
                                      testing::tiny_folder_args(root, dir, "cnn3", 8, 1)));
  const RecordedRun run = run_recorded(eval);
  const RecordingObserver* r = run.recorded;
  const double acc = run.acc;
  EXPECT_EQ(r->run_starts, 1);
  EXPECT_TRUE(r->steps.empty());
  EXPECT_TRUE(r->epochs.empty());
  EXPECT_TRUE(r->checkpoints.empty());
  ASSERT_EQ(r->evaluations.size(), 1u);
  EXPECT_TRUE(r->evaluations[0].alone);
  EXPECT_EQ(r->evaluations[0].samples, 12);
  ASSERT_TRUE(r->end.has_value());
  EXPECT_TRUE(r->end->completed);
  EXPECT_EQ(r->end->test_acc, acc);
  EXPECT_EQ(acc, r->evaluations[0].accuracy);
}

}  // namespace
}  // namespace engine::apps
