// cnn_train with airbench94's pieces on the tiny image-folder dataset (tests/cpu/cnn_train_test_util.h): a
// per-step triangle schedule, parameter groups, the lookahead weight average, flip-translate augmentation
// and test-time augmentation together; the average in the checkpoint; a resume that continues bit for bit
// (the schedule counts global steps, the average comes back from the file); a resume with another --epochs
// named as such; TTA changing the evaluation.

#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/cpu/cnn_train_test_util.h"

namespace engine::apps {
namespace {

using testing::file_bytes;
using testing::run_train;

std::vector<std::string> airbench_run(const std::string& root, const std::string& ckpt_dir, int epochs) {
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
          "--momentum",
          "0.85",
          "--nesterov",
          "--schedule",
          "triangle",
          "--schedule-unit",
          "step",
          "--param-group",
          "BatchNorm2d.bias:lr=4,wd=0",
          "--ema-every",
          "2",
          "--augment",
          "flip-translate",
          "--translate",
          "2",
          "--tta",
          "2",
          "--deterministic",
          "--seed",
          "5",
          "--checkpoint-dir",
          ckpt_dir};
}

TEST(CnnTrainAirbench, PiecesTrainSaveTheAverageAndResumeBitForBit) {
  const std::string root = testing::tiny_folder_dataset("airbench_resume");
  const std::string straight = testing::temp_dir("airbench_straight"),
                    second = testing::temp_dir("airbench_second");
  auto straight_args = airbench_run(root, straight, 3);
  straight_args.insert(straight_args.end(), {"--save-every", "1"});
  const testing::RunResult s = run_train(straight_args);
  ASSERT_EQ(s.exit_code, 0) << s.output;
  // The triangle's rate at the last step of epoch 3 (18 steps, peak at step 4): 0.05 * (1 - 0.93 * 13/14).
  EXPECT_NE(s.output.find("Epoch 3 | Batchsize: 8 | Steps: 6 | LR: 0.0068 |"), std::string::npos) << s.output;
  // The first leg is this 3-epoch run's own epoch-1 checkpoint. (A separate --epochs 1 run is another run:
  // it lays the triangle and the average's decay over 6 steps, not 18; see the next test.)
  const std::string first = straight + "/epoch1.safetensors";
  EXPECT_NE(file_bytes(first).find("optim.ema.features.0.weight"), std::string::npos)
      << "the average (started at step 2) is in the checkpoint";
  auto resumed = airbench_run(root, second, 3);
  resumed.insert(resumed.end(), {"--resume", first});
  const testing::RunResult r = run_train(resumed);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string a = file_bytes(straight + "/epoch3.safetensors"),
                    b = file_bytes(second + "/epoch3.safetensors");
  ASSERT_FALSE(a.empty());
  EXPECT_TRUE(a == b) << "3 epochs straight and 1 + resume + 2 differ";
}

TEST(CnnTrainAirbench, AResumeWithAnotherLengthSaysTheScheduleNowSpansIt) {
  const std::string root = testing::tiny_folder_dataset("airbench_relength");
  const std::string first = testing::temp_dir("airbench_relength_first"),
                    second = testing::temp_dir("airbench_relength_second");
  ASSERT_EQ(run_train(airbench_run(root, first, 1)).exit_code, 0);
  EXPECT_NE(file_bytes(first + "/last.safetensors").find("optim.ema.features.0.weight"), std::string::npos)
      << "the average (started at step 2) is in the checkpoint";
  auto resumed = airbench_run(root, second, 3);
  resumed.insert(resumed.end(), {"--resume", first + "/last.safetensors"});
  const testing::RunResult r = run_train(resumed);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // Epoch 1 ran under a 6-step triangle and average: the user is told that this is not a 3-epoch run.
  EXPECT_NE(r.output.find("the checkpoint's run was planned for 1 epoch(s), this one for 3"),
            std::string::npos)
      << r.output;
}

TEST(CnnTrainAirbench, TestTimeAugmentationChangesTheEvaluation) {
  const std::string root = testing::tiny_folder_dataset("airbench_tta");
  const std::string dir = testing::temp_dir("airbench_tta_out");
  ASSERT_EQ(run_train(airbench_run(root, dir, 1)).exit_code, 0);
  const auto eval = [&](const std::string& level) {
    const testing::RunResult e = run_train(
        {"--cpu", "--dataset", "folder:" + root, "--eval-only", dir + "/last.safetensors", "--tta", level});
    EXPECT_EQ(e.exit_code, 0) << e.output;
    const std::size_t at = e.output.find("Test Loss: ");
    return at == std::string::npos ? std::string() : e.output.substr(at, 18);
  };
  const std::string none = eval("0"), mirror = eval("1"), full = eval("2");
  ASSERT_FALSE(none.empty());
  // Other views give other logits: the averaged loss moves (to four decimals) from the plain evaluation.
  // (Levels 1 and 2 can agree to four decimals on this tiny, well-fit set: that level 2 averages its six
  // views with their weights is tests/cpu/test_time_augmentation_test.cpp's.)
  EXPECT_NE(none, mirror);
  EXPECT_NE(none, full);
}

TEST(CnnTrainAirbench, BadFlagsAreRefused) {
  const std::string root = testing::tiny_folder_dataset("airbench_bad");
  const std::string dir = testing::temp_dir("airbench_bad_out");
  const auto refused = [&](std::vector<std::string> extra, const std::string& says) {
    std::vector<std::string> args = {"--cpu",    "--dataset", "folder:" + root, "--model", "cnn3",
                                     "--epochs", "1",         "--batch-size",   "8",       "--checkpoint-dir",
                                     dir};
    args.insert(args.end(), extra.begin(), extra.end());
    const testing::RunResult r = run_train(args);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find(says), std::string::npos) << r.output;
  };
  refused({"--param-group", "BatchNorm.bias:lr=2"}, "selects no parameter");
  refused({"--param-group", "bias:speed=2"}, "unknown setting");
  refused({"--schedule-unit", "batch"}, "--schedule-unit");
  refused({"--eval-ema"}, "--eval-ema needs");
  refused({"--tta", "3"}, "--tta");
  refused({"--triangle-peak", "1.5"}, "--triangle-peak");
}

}  // namespace
}  // namespace engine::apps
