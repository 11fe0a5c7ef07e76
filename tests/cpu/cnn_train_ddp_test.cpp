// cnn_train as distributed data parallel on the CPU (gloo ranks, real processes), on the tiny image-folder
// dataset the tests write: the launcher (--cpu --nproc N) and torchrun-style variables; N ranks of batch B
// against one process of batch N*B; rank-0-only output and checkpoints; distributed evaluation equal to a
// single process's; exact resume; --accumulate; a failing rank; the launches refused before they start.

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/device.h"
#include "dist/tcp_store.h"
#include "optim/safetensors.h"
#include "tests/cpu/cnn_train_test_util.h"

namespace engine::apps {
namespace {

using testing::count_of;
using testing::file_bytes;
using testing::run_train;
using testing::with_args;

// The shared tiny run, on the CPU.
std::vector<std::string> tiny_args(const std::string& root, const std::string& ckpt_dir,
                                   const std::string& model, int batch, int epochs) {
  return testing::with_args({"--cpu"}, testing::tiny_folder_args(root, ckpt_dir, model, batch, epochs));
}

// The value after the last "Test Acc: " of an output ("63.05%").
std::string final_accuracy(const std::string& output) {
  const std::size_t at = output.rfind("Test Acc: ");
  if (at == std::string::npos) return "";
  return output.substr(at + 10, output.find('%', at) - at - 10);
}

// N ranks of batch B with SyncBatchNorm take the same step as one process with batch N*B: rank r's batch s is
// samples r, r+N, ... of the single process's batch s (DistributedSampler), SyncBN normalizes with the
// statistics of the concatenated batch, and the gradient average over ranks is the mean over it. resnet18
// has no dropout (whose masks depend on the batch layout). After one SGD step the momentum buffers hold the
// gradients (plus weight decay), and weights and BatchNorm buffers have moved. Only float32 rounding differs:
// sums of up to 16*32*32 terms in other orders, about sqrt(16384) * 6e-8 = 8e-6 relative, so 1e-5 of each
// tensor's largest value (measured: 4e-7); without --sync-bn the comparison is off by O(1) (statistics of 8
// samples, not 16). One step only: this toy data set is nearly constant within a class, BatchNorm divides by
// tiny deviations, and a second step amplifies the first step's rounding differences to 3e-3 (two steps on
// Fashion-MNIST stay within 2e-6).
TEST(CnnTrainDdp, TwoRanksWithSyncBnFollowTheSingleProcessRunOfTheConcatenatedBatch) {
  const std::string root = testing::tiny_folder_dataset("ddp_follow");
  const std::string one = testing::temp_dir("ddp_follow_one"), two = testing::temp_dir("ddp_follow_two");
  // --image-size 8 --resize 8: the files' own 8x8 pixels, unresampled (a sum now has 16*8*8 terms, well
  // inside the bound above). Upsampled to 32x32 by the on-disk reader's Pillow-exact bilinear (--resize 32),
  // this toy's near-constant images let BatchNorm amplify the rounding to 1.6e-5 of the largest value.
  const auto limits = std::vector<std::string>{"--limit-train", "16", "--limit-test", "6",
                                               "--image-size",  "8",  "--resize",     "8"};
  const testing::RunResult single = run_train(with_args(tiny_args(root, one, "resnet18", 16, 1), limits));
  ASSERT_EQ(single.exit_code, 0) << single.output;
  const testing::RunResult ddp = run_train(
      with_args(tiny_args(root, two, "resnet18", 8, 1), with_args(limits, {"--nproc", "2", "--sync-bn"})));
  ASSERT_EQ(ddp.exit_code, 0) << ddp.output;
  EXPECT_NE(ddp.output.find("2 rank(s) through gloo"), std::string::npos) << ddp.output;
  EXPECT_NE(ddp.output.find("global batch 16 (8 per rank)"), std::string::npos) << ddp.output;
  // Issue 44: CPU ranks were asked for "one GPU's img/s".
  EXPECT_NE(
      ddp.output.find("(give --baseline-ips, the img/s of the same run in one process, for the speedup)"),
      std::string::npos)
      << ddp.output;

  EXPECT_EQ(optim::SafetensorsFile::read(one + "/epoch1.safetensors").metadata().at("step"), "1");
  EXPECT_EQ(optim::SafetensorsFile::read(two + "/epoch1.safetensors").metadata().at("step"), "1");
  const std::vector<testing::TensorDifference> diffs =
      testing::checkpoint_differences(one + "/epoch1.safetensors", two + "/epoch1.safetensors");
  for (const testing::TensorDifference& d : diffs) {
    EXPECT_LE(d.worst, 1e-5 * d.scale)
        << d.name << ": largest difference " << d.worst << " of values up to " << d.scale;
  }
  const std::size_t compared = diffs.size();
  EXPECT_GT(compared, 180u) << "resnet18's weights, BatchNorm buffers and momentum buffers";
}

// Three ranks: one log line per epoch and one "saved" (rank 0's), the weights checked bitwise equal on every
// rank before each evaluation (the run fails otherwise), and a test set of 11 samples split 4/4/3: the
// reported accuracy is the single-process evaluation of the saved checkpoint, exactly.
TEST(CnnTrainDdp, ThreeRanksLogOnceAndEvaluateExactlyAsOneProcess) {
  const std::string root = testing::tiny_folder_dataset("ddp_three");
  const std::string dir = testing::temp_dir("ddp_three_out");
  const testing::RunResult r = run_train(with_args(
      tiny_args(root, dir, "cnn3", 4, 2),
      {"--nproc", "3", "--limit-test", "11", "--metrics", dir + "/m.jsonl", "--baseline-ips", "200"}));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(count_of(r.output, "Epoch 1 |"), 1u) << r.output;
  EXPECT_EQ(count_of(r.output, "Epoch 2 |"), 1u) << r.output;
  EXPECT_EQ(count_of(r.output, "cnn_train: saved "), 1u) << r.output;
  const std::string metrics = file_bytes(dir + "/m.jsonl");
  EXPECT_EQ(count_of(metrics, "\n"), 2u) << "rank 0 alone writes --metrics";
  EXPECT_EQ(count_of(metrics, "\"world_size\":3"), 2u) << metrics;
  EXPECT_NE(r.output.find("Steps: 4 |"), std::string::npos) << "48 samples / 3 ranks / batch 4:\n"
                                                            << r.output;
  // The last line: global img/s (the median of the epochs after the first; here epoch 2's), speedup over
  // --baseline-ips and scaling efficiency = speedup / ranks.
  const std::size_t at = r.output.find("cnn_train: 3 ranks: ");
  ASSERT_NE(at, std::string::npos) << r.output;
  std::string ips_text(32, '\0');
  double speedup = 0, efficiency = 0;
  ASSERT_EQ(
      std::sscanf(r.output.c_str() + at,
                  "cnn_train: 3 ranks: %31s img/s in all | speedup %lfx over --baseline-ips 200 | scaling "
                  "efficiency %lf%%",
                  ips_text.data(), &speedup, &efficiency),
      3)
      << r.output.substr(at);
  ips_text.resize(std::strlen(ips_text.c_str()));
  std::string digits = ips_text;
  digits.erase(std::remove(digits.begin(), digits.end(), ','), digits.end());
  // Printed figures are rounded: img/s to 1 (0.5/200 of speedup), speedup to 0.01, efficiency to 0.1.
  const double ips = std::stod(digits);
  EXPECT_NEAR(speedup, ips / 200.0, 0.005 + 0.5 / 200.0) << r.output.substr(at);
  EXPECT_NEAR(efficiency, 100.0 * ips / 200.0 / 3.0, 0.05 + 100.0 * 0.5 / 200.0 / 3.0) << r.output.substr(at);
  EXPECT_NE(r.output.find("| " + ips_text + " img/s |"), std::string::npos)
      << "the last line's figure is the epoch line's (epoch 2, the only one after the first):\n"
      << r.output;

  const testing::RunResult eval = run_train({"--cpu", "--dataset", "folder:" + root, "--limit-test", "11",
                                             "--eval-only", dir + "/last.safetensors"});
  ASSERT_EQ(eval.exit_code, 0) << eval.output;
  EXPECT_NE(eval.output.find("Samples: 11"), std::string::npos) << eval.output;
  ASSERT_FALSE(final_accuracy(r.output).empty());
  EXPECT_EQ(final_accuracy(r.output), final_accuracy(eval.output)) << r.output << eval.output;

  // Distributed --eval-only over the same 11 samples gives the same figure too.
  const testing::RunResult eval3 =
      run_train({"--cpu", "--nproc", "3", "--dataset", "folder:" + root, "--limit-test", "11", "--eval-only",
                 dir + "/last.safetensors"});
  ASSERT_EQ(eval3.exit_code, 0) << eval3.output;
  EXPECT_NE(eval3.output.find("Samples: 11"), std::string::npos) << eval3.output;
  EXPECT_EQ(final_accuracy(eval3.output), final_accuracy(eval.output)) << eval3.output;
}

TEST(CnnTrainDdp, LogAllRanksShowsEveryRanksLinesTagged) {
  const std::string root = testing::tiny_folder_dataset("ddp_log_all");
  const testing::RunResult r =
      run_train(with_args(tiny_args(root, testing::temp_dir("ddp_log_all_out"), "cnn3", 8, 1),
                          {"--nproc", "2", "--log-all-ranks", "--limit-train", "16"}));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("[rank 0] [CPU] Epoch 1 |"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("[rank 1] [CPU] Epoch 1 |"), std::string::npos) << r.output;
}

// 2 epochs on two ranks, and 1 + --resume + 1 on two ranks: byte-identical checkpoints (weights, rank 0's
// BatchNorm buffers, momentum, step, dropout offset).
TEST(CnnTrainDdp, ResumeOnTwoRanksContinuesBitForBit) {
  const std::string root = testing::tiny_folder_dataset("ddp_resume");
  const std::string straight = testing::temp_dir("ddp_resume_straight"),
                    first = testing::temp_dir("ddp_resume_first"),
                    second = testing::temp_dir("ddp_resume_second");
  const std::vector<std::string> two = {"--nproc", "2", "--augment", "crop-flip"};
  ASSERT_EQ(run_train(with_args(tiny_args(root, straight, "cnn3", 8, 2), two)).exit_code, 0);
  ASSERT_EQ(run_train(with_args(tiny_args(root, first, "cnn3", 8, 1), two)).exit_code, 0);
  const testing::RunResult r = run_train(with_args(
      tiny_args(root, second, "cnn3", 8, 2), with_args(two, {"--resume", first + "/last.safetensors"})));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string a = file_bytes(straight + "/epoch2.safetensors"),
                    b = file_bytes(second + "/epoch2.safetensors");
  ASSERT_FALSE(a.empty());
  EXPECT_TRUE(a == b) << "2 epochs straight and 1 + resume + 1 differ on two ranks";
}

// --accumulate 2 over 5 batches per epoch: optimizer steps after batches 2, 4 and 5 (the last group is
// shorter), alone and on two ranks (one all-reduce per step: the Reducer's own test counts them).
TEST(CnnTrainDdp, AccumulateStepsOncePerKBatches) {
  const std::string root = testing::tiny_folder_dataset("ddp_accumulate");
  for (const std::string nproc : {"1", "2"}) {
    const std::string dir = testing::temp_dir("ddp_accumulate_" + nproc);
    const int batch = nproc == "1" ? 8 : 4;  // 40 samples: 5 batches per rank either way
    const testing::RunResult r =
        run_train(with_args(tiny_args(root, dir, "cnn3", batch, 1),
                            {"--nproc", nproc, "--accumulate", "2", "--limit-train", "40"}));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("Steps: 5 |"), std::string::npos) << r.output;
    EXPECT_EQ(optim::SafetensorsFile::read(dir + "/last.safetensors").metadata().at("step"), "3") << nproc;
  }
}

// What torchrun, mpirun and srun do: start every rank themselves, each with its family's variables (the
// test sets them as those launchers would; none of them is installed here).
TEST(CnnTrainDdp, TorchrunMpirunAndSrunVariablesMakeEachProcessOneRank) {
  const std::string root = testing::tiny_folder_dataset("ddp_env");
  struct Family {
    std::string source, variables;  // {0}: the rank
  };
  const Family families[] = {
      {"torchrun", "RANK={0} LOCAL_RANK={0} WORLD_SIZE=2 MASTER_ADDR=127.0.0.1"},
      {"openmpi",
       "OMPI_COMM_WORLD_RANK={0} OMPI_COMM_WORLD_LOCAL_RANK={0} OMPI_COMM_WORLD_SIZE=2 "
       "OMPI_COMM_WORLD_LOCAL_SIZE=2"},
      {"slurm", "SLURM_PROCID={0} SLURM_LOCALID={0} SLURM_NTASKS=2 SLURM_NNODES=1"},
  };
  ::setenv("OMP_NUM_THREADS", "1", 0);
  for (const Family& family : families) {
    const std::string dir = testing::temp_dir("ddp_env_" + family.source);
    const int port = dist::find_free_port();
    std::string script;
    for (int rank = 0; rank < 2; ++rank) {
      std::string command = testing::shell_quote(testing::program_path("cnn_train"));
      for (const std::string& a : with_args(tiny_args(root, dir, "cnn3", 8, 1), {"--limit-train", "16"}))
        command.append(1, ' ').append(testing::shell_quote(a));
      script += fmt::format("{0} MASTER_PORT={1} {2} > {3}/rank{4}.log 2>&1 & p{4}=$!; ",
                            fmt::format(fmt::runtime(family.variables), rank), port, command, dir, rank);
    }
    script += "wait $p0; a=$?; wait $p1; b=$?; exit $((a | b))";
    const int status = std::system(("bash -c " + testing::shell_quote(script)).c_str());
    const std::string log0 = file_bytes(dir + "/rank0.log"), log1 = file_bytes(dir + "/rank1.log");
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << family.source << "\n" << log0 << log1;
    EXPECT_NE(log0.find("2 rank(s) through gloo (started by " + family.source + ")"), std::string::npos)
        << log0;
    EXPECT_EQ(count_of(log0, "Epoch 1 |"), 1u) << log0;
    EXPECT_EQ(log1.find("Epoch 1 |"), std::string::npos) << "rank 1 logs nothing by default:\n" << log1;
  }
}

// A rank that fails ends the run: the launcher stops the others and exits non-zero naming the rank.
TEST(CnnTrainDdp, AFailingRankEndsEveryRankAndIsNamed) {
  const std::string root = testing::tiny_folder_dataset("ddp_fail");
  auto args = with_args(tiny_args(root, testing::temp_dir("ddp_fail_out"), "cnn3", 8, 2), {"--nproc", "2"});
  *(std::find(args.begin(), args.end(), "--lr") + 1) = "1e30";  // the loss becomes NaN/Inf at step 2
  const testing::RunResult r = run_train(args);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("training loss is"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("launcher: rank "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("the other ranks were stopped"), std::string::npos) << r.output;
}

// Refused before any rank starts (exit 2, the flag named).
TEST(CnnTrainDdp, BadLaunchesAreRefusedBeforeAnythingStarts) {
  const std::string root = testing::tiny_folder_dataset("ddp_bad");
  const std::vector<std::string> base = {"--dataset", "folder:" + root,   "--epochs",
                                         "1",         "--checkpoint-dir", ""};
  struct Case {
    std::vector<std::string> args;
    std::string expected;
  };
  std::vector<Case> cases = {
      {{"--cpu", "--gpus", "0"}, "--gpus and --cpu exclude each other"},
      {{"--gpus", "0", "--nproc", "2"}, "--gpus and --nproc exclude each other"},
      {{"--cpu", "--nproc", "2", "--backend", "nccl"}, "--backend nccl needs GPU ranks"},
      {{"--cpu", "--nproc", "0"}, "--nproc"},
      {{"--cpu", "--nproc", "2", "--backend", "mpi"}, "--backend"},
      {{"--cpu", "--nproc", "2", "--grad-compression", "fp8"}, "--grad-compression"},
      {{"--cpu", "--nproc", "2", "--bucket-mb", "0"}, "--bucket-mb"},
      {{"--cpu", "--accumulate", "0"}, "--accumulate"},
  };
  if (device_count() == 0) {
    cases.push_back({{"--gpus", "0,1"}, "--gpus 0,1: no GPU is visible"});
  } else {
    cases.push_back({{"--gpus", "0,,1"}, "has an empty entry"});
    cases.push_back({{"--gpus", "0,x"}, "'x' is not a GPU id"});
    cases.push_back({{"--gpus", "0,0"}, "GPU 0 is listed twice"});
    cases.push_back({{"--gpus", std::to_string(device_count())}, "does not exist"});
  }
  for (const Case& c : cases) {
    const testing::RunResult r = run_train(with_args(base, c.args));
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find(c.expected), std::string::npos) << "expected '" << c.expected << "' in:\n"
                                                            << r.output;
    EXPECT_EQ(r.output.find("[rank "), std::string::npos) << "no rank may start:\n" << r.output;
  }
  // Under torchrun, --nproc would start ranks of ranks.
  ::setenv("RANK", "0", 1);
  ::setenv("WORLD_SIZE", "1", 1);
  const testing::RunResult r = run_train(with_args(base, {"--cpu", "--nproc", "2"}));
  ::unsetenv("RANK");
  ::unsetenv("WORLD_SIZE");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("started by torchrun"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace engine::apps
