// cnn_train end to end on a tiny image-folder dataset the test writes (3 classes of 8x8 PNGs, resized to
// 32x32, model cnn3): the log format, --metrics and --plot outputs (--plot skips without gnuplot),
// --eval-only, resume that continues bit for bit, and the run-time failures (a NaN loss, a checkpoint of
// another model, a truncated checkpoint).

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "tests/common/environment.h"
#include "tests/cpu/cnn_train_test_util.h"

namespace engine::apps {
namespace {

using testing::file_bytes;
using testing::run_train;

std::vector<std::string> tiny_run(const std::string& root, const std::string& ckpt_dir, int epochs) {
  return {"--cpu",
          "--dataset",
          "folder:" + root,
          "--model",
          "cnn3",
          "--batch-size",
          "8",
          "--epochs",
          std::to_string(epochs),
          "--lr",
          "0.05",
          "--augment",
          "crop-flip",
          "--deterministic",
          "--seed",
          "5",
          "--checkpoint-dir",
          ckpt_dir};
}

// A line that starts with `prefix` and then reads, field by field, as the epoch log line:
// "Loss: 1.0933 | Acc: 61.20% | Test Loss: 1.0417 | Test Acc: 63.05% | Time: 2.13s | 23,400 img/s | Mem: 812
// MB".
bool has_epoch_line(const std::string& output, const std::string& prefix) {
  const std::size_t at = output.find(prefix);
  if (at == std::string::npos) return false;
  const std::size_t end = output.find('\n', at);
  const std::string rest = output.substr(at + prefix.size(), end - at - prefix.size());
  double loss = 0, acc = 0, test_loss = 0, test_acc = 0, seconds = 0;
  char rate[32] = {};
  int mem = 0, used = 0;
  const int fields =
      std::sscanf(rest.c_str(),
                  "Loss: %lf | Acc: %lf%% | Test Loss: %lf | Test Acc: %lf%% | Time: %lfs | %31s img/s | "
                  "Mem: %d MB%n",
                  &loss, &acc, &test_loss, &test_acc, &seconds, rate, &mem, &used);
  return fields == 7 && static_cast<std::size_t>(used) == rest.size() && acc >= 0 && acc <= 100 &&
         test_acc >= 0 && test_acc <= 100;
}

TEST(CnnTrainRun, LogsOneLinePerEpochAndWritesMetrics) {
  const std::string root = testing::tiny_folder_dataset("run_log");
  const std::string dir = testing::temp_dir("run_log_out");
  auto args = tiny_run(root, dir, 2);
  args.insert(args.end(), {"--metrics", dir + "/m.jsonl", "--save-every", "1"});
  const testing::RunResult r = run_train(args);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has_epoch_line(r.output, "[CPU] Epoch 2 | Batchsize: 8 | Steps: 6 | LR: 0.0500 | "))
      << r.output;
  EXPECT_NE(r.output.find("\nTest Acc: "), std::string::npos) << r.output;
  EXPECT_EQ(r.output.substr(r.output.size() - 2), "%\n") << "the last line is the accuracy:\n" << r.output;
  const std::string metrics = file_bytes(dir + "/m.jsonl");
  EXPECT_EQ(std::count(metrics.begin(), metrics.end(), '\n'), 2) << metrics;
  EXPECT_NE(metrics.find("\"test_acc\""), std::string::npos);
  EXPECT_TRUE(std::filesystem::exists(dir + "/epoch1.safetensors"));
  EXPECT_TRUE(std::filesystem::exists(dir + "/epoch2.safetensors"));

  const testing::RunResult eval = run_train({"--cpu", "--dataset", "folder:" + root, "--eval-only",
                                             dir + "/epoch2.safetensors", "--batch-size", "5"});
  ASSERT_EQ(eval.exit_code, 0) << eval.output;
  EXPECT_NE(eval.output.find("Samples: 12"), std::string::npos) << eval.output;  // every test sample once

  // cnn_predict on one test image: the top 2 classes with probabilities; a missing image is named (exit 2).
  const testing::RunResult predict = testing::run_program(
      "cnn_predict",
      {"--checkpoint", dir + "/epoch2.safetensors", "--top", "2", root + "/test/class_b/0.png"});
  ASSERT_EQ(predict.exit_code, 0) << predict.output;
  EXPECT_NE(predict.output.find("0.png\n"), std::string::npos) << predict.output;
  std::size_t classes_printed = 0;
  for (std::size_t at = 0; (at = predict.output.find("%  class_", at)) != std::string::npos; ++at)
    ++classes_printed;
  EXPECT_EQ(classes_printed, 2u) << predict.output;
  const testing::RunResult missing =
      testing::run_program("cnn_predict", {"--checkpoint", dir + "/epoch2.safetensors", root + "/none.png"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.output.find("none.png"), std::string::npos) << missing.output;
}

TEST(CnnTrainRun, PlotDrawsTheCurvesAsAPng) {
  SKIP_WITHOUT_TOOL("gnuplot");  // --plot runs gnuplot (Debian's gnuplot-nox); the GPU image has none
  const std::string root = testing::tiny_folder_dataset("run_plot");
  const std::string dir = testing::temp_dir("run_plot_out");
  auto args = tiny_run(root, dir, 2);
  args.insert(args.end(), {"--plot", dir + "/curves.png"});
  const testing::RunResult r = run_train(args);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string png = file_bytes(dir + "/curves.png");
  ASSERT_GT(png.size(), 8u) << r.output;
  EXPECT_EQ(png.substr(1, 3), "PNG");
}

TEST(CnnTrainRun, ResumeContinuesBitForBit) {
  const std::string root = testing::tiny_folder_dataset("run_resume");
  const std::string straight = testing::temp_dir("resume_straight"),
                    first = testing::temp_dir("resume_first"), second = testing::temp_dir("resume_second");
  ASSERT_EQ(run_train(tiny_run(root, straight, 2)).exit_code, 0);
  ASSERT_EQ(run_train(tiny_run(root, first, 1)).exit_code, 0);
  auto resumed = tiny_run(root, second, 2);
  resumed.insert(resumed.end(), {"--resume", first + "/last.safetensors"});
  const testing::RunResult r = run_train(resumed);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("Epoch 1 |"), std::string::npos) << "epoch 1 was already done:\n" << r.output;
  // Same weights, BatchNorm statistics, counters, momentum, step and dropout offset: the files are identical.
  const std::string a = file_bytes(straight + "/epoch2.safetensors"),
                    b = file_bytes(second + "/epoch2.safetensors");
  ASSERT_FALSE(a.empty());
  EXPECT_TRUE(a == b) << "2 epochs straight and 1 + resume + 1 differ";
}

TEST(CnnTrainRun, NanLossStopsNamingEpochAndStep) {
  const std::string root = testing::tiny_folder_dataset("run_nan");
  auto args = tiny_run(root, testing::temp_dir("run_nan_out"), 2);
  *(std::find(args.begin(), args.end(), "--lr") + 1) = "1e30";
  const testing::RunResult r = run_train(args);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find(" at epoch 1, step "), std::string::npos) << r.output;
  EXPECT_TRUE(r.output.find("loss is nan") != std::string::npos ||
              r.output.find("loss is -nan") != std::string::npos ||
              r.output.find("loss is inf") != std::string::npos ||
              r.output.find("loss is -inf") != std::string::npos)
      << r.output;
}

TEST(CnnTrainRun, RefusesACheckpointOfAnotherModel) {
  const std::string root = testing::tiny_folder_dataset("run_other");
  const std::string dir = testing::temp_dir("run_other_out");
  ASSERT_EQ(run_train(tiny_run(root, dir, 1)).exit_code, 0);
  const testing::RunResult r = run_train({"--cpu", "--dataset", "folder:" + root, "--model", "vgg6",
                                          "--batch-size", "8", "--resume", dir + "/last.safetensors"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("was trained as model cnn3, this run's --model is vgg6"), std::string::npos)
      << r.output;
}

TEST(CnnTrainRun, RefusesATruncatedCheckpoint) {
  const std::string root = testing::tiny_folder_dataset("run_trunc");
  const std::string dir = testing::temp_dir("run_trunc_out");
  ASSERT_EQ(run_train(tiny_run(root, dir, 1)).exit_code, 0);
  const std::string path = dir + "/last.safetensors";
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 100);
  const testing::RunResult r =
      run_train({"--cpu", "--dataset", "folder:" + root, "--batch-size", "8", "--eval-only", path});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(path), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("out of range"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace engine::apps
