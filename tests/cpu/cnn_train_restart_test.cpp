// cnn_train stopped and started again (label cpu): --resume auto (nothing at first, then the newest
// checkpoint, a broken file skipped), SIGTERM mid-epoch (a checkpoint at the sampler's position that --resume
// auto continues from, bit for bit the uninterrupted run), the same for two ranks under our launcher (SIGINT
// to the launcher, forwarded), and a second signal that ends the run at once.

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <signal.h>
#include <string>
#include <unistd.h>
#include <vector>

#include <gtest/gtest.h>

#include "dist/tcp_store.h"
#include "optim/safetensors.h"
#include "tests/cpu/cnn_train_restart_test_util.h"
#include "tests/cpu/cnn_train_test_util.h"

namespace engine::apps {
namespace {

using testing::LiveProcess;
using testing::run_train;
using testing::with_args;

// The shared tiny run on the CPU; lr 0.005 (not 0.05): the long runs here take batches of 4, on which the
// toy data set's near-constant classes make BatchNorm blow 0.05 up to a NaN loss within 30 steps.
std::vector<std::string> cpu_args(const std::string& root, const std::string& dir, int batch, int epochs) {
  auto args = with_args({"--cpu"}, testing::tiny_folder_args(root, dir, "cnn3", batch, epochs));
  if (batch < 8) *(std::find(args.begin(), args.end(), "--lr") + 1) = "0.005";
  return args;
}

std::vector<std::string> command(const std::vector<std::string>& args) {
  return with_args({testing::program_path("cnn_train")}, args);
}

// Every tensor of both checkpoints equal, bit for bit (weights, buffers, momentum).
void expect_same_tensors(const std::string& a, const std::string& b) {
  const auto diffs = testing::checkpoint_differences(a, b);
  ASSERT_FALSE(diffs.empty()) << a;
  for (const testing::TensorDifference& d : diffs)
    EXPECT_EQ(d.worst, 0.0) << d.name << ": " << a << " vs " << b;
}

// "Steps: 600 | LR: ... | Loss: ... | Acc: ...%" of epoch `e`'s line.
std::string epoch_summary(const std::string& output, int e) {
  const std::size_t line = output.find("Epoch " + std::to_string(e) + " |");
  if (line == std::string::npos) return "no epoch " + std::to_string(e);
  const std::size_t from = output.find("Steps: ", line), to = output.find(" | Test Loss", line);
  return output.substr(from, to - from);
}

// The one mid-epoch checkpoint left in `dir` (older ones are removed when a newer is written), or "".
std::string only_step_file(const std::string& dir) {
  std::vector<std::string> found;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().filename().string().rfind("step", 0) == 0) found.push_back(e.path().string());
  }
  return found.size() == 1 ? found[0] : "";
}

TEST(CnnTrainRestart, ResumeAutoStartsFromScratchThenContinuesFromTheNewestCheckpoint) {
  const std::string root = testing::tiny_folder_dataset("restart_auto_data");
  const std::string straight = testing::temp_dir("restart_auto_straight"),
                    dir = testing::temp_dir("restart_auto");
  const testing::RunResult reference = run_train(cpu_args(root, straight, 8, 2));
  ASSERT_EQ(reference.exit_code, 0) << reference.output;

  testing::RunResult r = run_train(with_args(cpu_args(root, dir, 8, 1), {"--resume", "auto"}));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("no checkpoint in " + dir + " yet: starting from scratch"), std::string::npos)
      << r.output;
  std::ofstream(dir + "/zz_partial_copy.safetensors") << "not a checkpoint";  // skipped, with a note
  r = run_train(with_args(cpu_args(root, dir, 8, 2), {"--resume", "auto"}));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("skipping " + dir + "/zz_partial_copy.safetensors"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("resumed from " + dir + "/epoch1.safetensors: 1 epoch(s) done"), std::string::npos)
      << r.output;
  EXPECT_EQ(testing::count_of(r.output, "Epoch "), 1u) << r.output;  // epoch 2 only
  expect_same_tensors(straight + "/epoch2.safetensors", dir + "/epoch2.safetensors");

  // Refused before anything runs: auto without a folder to look in.
  r = run_train(with_args(cpu_args(root, "", 8, 1), {"--resume", "auto"}));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("--resume auto looks for checkpoints in --checkpoint-dir"), std::string::npos)
      << r.output;
}

// 1200 samples in batches of 4: 300 steps an epoch, so the signal sent after the first mid-epoch checkpoint
// (step 20) lands well inside the first epoch. The run stops at a step boundary, saves the sampler position
// with everything else, exits 128 + 15; --resume auto then ends exactly where the uninterrupted run ends.
TEST(CnnTrainRestart, SigtermMidEpochLeavesACheckpointThatResumeAutoContinuesBitForBit) {
  const std::string root = testing::tiny_folder_dataset("restart_sigterm_data", 400);
  const std::string straight = testing::temp_dir("restart_sigterm_straight"),
                    dir = testing::temp_dir("restart_sigterm");
  const std::vector<std::string> extra = {"--resume", "auto", "--save-every-steps", "20"};
  const testing::RunResult reference = run_train(with_args(cpu_args(root, straight, 4, 2), extra));
  ASSERT_EQ(reference.exit_code, 0) << reference.output;

  LiveProcess run(command(with_args(cpu_args(root, dir, 4, 2), extra)));
  ASSERT_TRUE(run.wait_for("saved " + dir + "/step20.safetensors", 120)) << run.output();
  run.signal(SIGTERM);
  EXPECT_EQ(run.finish(120), 128 + SIGTERM) << run.output();
  EXPECT_NE(run.output().find("got SIGTERM: finishing the current step"), std::string::npos) << run.output();
  EXPECT_NE(run.output().find("stopped by SIGTERM at epoch 1, step "), std::string::npos) << run.output();
  EXPECT_NE(run.output().find("run it again with --resume auto to continue"), std::string::npos);
  const std::string saved = only_step_file(dir);
  ASSERT_FALSE(saved.empty()) << "one mid-epoch checkpoint expected in " << dir;
  const auto meta = optim::SafetensorsFile::read(saved).metadata();
  EXPECT_EQ(meta.at("epoch"), "0");
  EXPECT_GT(std::stoll(meta.at("sampler_position")), 20 * 4);  // at or after step 20's checkpoint
  EXPECT_LT(std::stoll(meta.at("sampler_position")), 1200);

  const testing::RunResult resumed = run_train(with_args(cpu_args(root, dir, 4, 2), extra));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("resumed from " + saved + ": epoch 1 from sampler position " +
                                meta.at("sampler_position")),
            std::string::npos)
      << resumed.output;
  expect_same_tensors(straight + "/epoch2.safetensors", dir + "/epoch2.safetensors");
  // The first epoch's line counts every step, and its loss and accuracy cover every sample: the sums before
  // the stop came back from the checkpoint (printed to 4 and 2 decimals: the summation order is not seen).
  EXPECT_EQ(epoch_summary(reference.output, 1), epoch_summary(resumed.output, 1)) << resumed.output;
  EXPECT_EQ(reference.output.substr(reference.output.rfind("Test Acc: ")),
            resumed.output.substr(resumed.output.rfind("Test Acc: ")));
}

// Two ranks under our launcher: Ctrl-C (SIGINT) reaches the launcher, which forwards it once; the ranks agree
// on the step to stop at, rank 0 saves, both exit, and two ranks resume from the same place.
TEST(CnnTrainRestart, TwoRanksStopTogetherOnSigintToTheLauncherAndResumeBitForBit) {
  const std::string root = testing::tiny_folder_dataset("restart_sigint_data", 400);
  const std::string straight = testing::temp_dir("restart_sigint_straight"),
                    dir = testing::temp_dir("restart_sigint");
  const std::vector<std::string> extra = {"--nproc", "2", "--resume", "auto", "--save-every-steps", "20"};
  const testing::RunResult reference = run_train(with_args(cpu_args(root, straight, 4, 2), extra));
  ASSERT_EQ(reference.exit_code, 0) << reference.output;

  LiveProcess run(command(with_args(cpu_args(root, dir, 4, 2), extra)));
  ASSERT_TRUE(run.wait_for("saved " + dir + "/step20.safetensors", 120)) << run.output();
  run.signal(SIGINT);
  EXPECT_EQ(run.finish(120), 128 + SIGINT) << run.output();
  EXPECT_NE(run.output().find("launcher: stopped by signal 2 (forwarded to every rank)"), std::string::npos)
      << run.output();
  EXPECT_EQ(testing::count_of(run.output(), "got SIGINT"), 2u) << "each rank once:\n" << run.output();
  const std::string saved = only_step_file(dir);
  ASSERT_FALSE(saved.empty()) << run.output();

  const testing::RunResult resumed = run_train(with_args(cpu_args(root, dir, 4, 2), extra));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("resumed from " + saved), std::string::npos) << resumed.output;
  expect_same_tensors(straight + "/epoch2.safetensors", dir + "/epoch2.safetensors");
}

// A rank that cannot finish its step (its peer is frozen, so the all-reduce waits) still ends at once on a
// second signal; a repeat within a second would count as the same stop.
TEST(CnnTrainRestart, ASecondSignalEndsTheRunAtOnce) {
  const std::string root = testing::tiny_folder_dataset("restart_second_data", 400);
  const std::string dir = testing::temp_dir("restart_second");
  const int port = dist::find_free_port();
  const auto args = with_args(cpu_args(root, dir, 4, 2), {"--save-every-steps", "20", "--timeout", "120"});
  auto env = [&](int rank) {
    return std::vector<std::string>{"RANK=" + std::to_string(rank), "WORLD_SIZE=2",
                                    "LOCAL_RANK=" + std::to_string(rank), "MASTER_ADDR=127.0.0.1",
                                    "MASTER_PORT=" + std::to_string(port)};
  };
  LiveProcess rank0(command(args), env(0)), rank1(command(args), env(1));
  ASSERT_TRUE(rank0.wait_for("saved " + dir + "/step20.safetensors", 120)) << rank0.output();
  rank1.signal(SIGSTOP);
  rank0.signal(SIGTERM);
  ASSERT_TRUE(rank0.wait_for("got SIGTERM", 10)) << rank0.output();
  ::usleep(1'500'000);
  EXPECT_TRUE(rank0.running()) << "rank 0 waits for its frozen peer:\n" << rank0.output();
  const auto start = std::chrono::steady_clock::now();
  rank0.signal(SIGTERM);
  EXPECT_EQ(rank0.finish(10), 128 + SIGTERM) << rank0.output();
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 5.0);
  EXPECT_NE(rank0.output().find("second stop signal: exiting now"), std::string::npos) << rank0.output();
  rank1.signal(SIGKILL);
}

}  // namespace
}  // namespace engine::apps
