// cnn_train's CUDA paths that the rest of the GPU tests do not reach, each on the tiny image-folder dataset
// the tests write (the in-process Trainer runs: the same toy in CIFAR-10's format, in memory) (label gpu;
// skipped where no device is visible): --accumulate K > 1, bf16 gradient compression, --resume and
// --eval-only, cuDNN's benchmark search inside the trainer, SyncBatchNorm over two NCCL ranks on one GPU, the
// staged (not GPU-resident) loader, and a device other than cuda:0.
//
// References and tolerances. A CUDA run is compared with the same run on the CPU (--cpu, the float64-
// accumulating reference rounded to fp32 per op) or with another CUDA run. tests/gpu/layers_gpu_test.cpp
// shows one training step agrees with the CPU to 2e-3 relative (L2) in every gradient and 5e-4 in every
// forward value. A weight moves by lr (g + wd w) per step, so after S steps two runs differ by about
// S lr 2e-3 |g|, and BatchNorm's running statistics by 5e-4 of their size; with lr 0.05 and a few steps both
// are far below 2e-3 of each tensor's largest value, the bound used for the GPU-vs-CPU comparisons (a wiring
// bug, such as a missing 1/K or a skipped all-reduce, moves weights by O(lr |g|) = O(1e-2) of their size).
// Runs that must be equal bit for bit (same device, deterministic algorithms, the same batches) are compared
// byte for byte.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <nccl.h>

#include "apps/train/observers.h"
#include "apps/train/train_config.h"
#include "apps/train/trainer.h"
#include "core/allocator.h"
#include "core/cuda_check.h"
#include "optim/safetensors.h"
#include "tests/common/gpu.h"
#include "tests/cpu/cnn_train_test_util.h"
#include "tests/cpu/tiny_cifar_dataset.h"

namespace engine::apps {
namespace {

using testing::file_bytes;
using testing::run_train;
using testing::with_args;

// 2e-3 of each tensor's largest value (see the header comment).
constexpr double kGpuVsCpu = 2e-3;

// Every tensor of `a` within `relative` of its largest value of the same tensor in `b`.
void expect_checkpoints_close(const std::string& a, const std::string& b, double relative,
                              const std::string& what) {
  const auto differences = testing::checkpoint_differences(a, b);
  ASSERT_FALSE(differences.empty()) << what << ": " << a << " holds no tensor";
  for (const testing::TensorDifference& d : differences) {
    EXPECT_LE(d.worst, relative * d.scale) << what << ": " << testing::describe(d);
  }
}

void expect_checkpoints_identical(const std::string& a, const std::string& b, const std::string& what) {
  const std::string x = file_bytes(a), y = file_bytes(b);
  ASSERT_FALSE(x.empty()) << what << ": " << a << " is missing";
  EXPECT_TRUE(x == y) << what << ": " << a << " and " << b << " differ";
}

// The number after `key` in `text` (e.g. "Test Loss: "), or NaN.
double number_after(const std::string& text, const std::string& key) {
  const std::size_t at = text.find(key);
  if (at == std::string::npos) return std::nan("");
  return std::strtod(text.c_str() + at + key.size(), nullptr);
}

// --accumulate 2 on CUDA: the loss-scaled backward (each micro-batch's gradient times 1/2) and the reducer's
// no-sync buffer (the first micro-batch's gradients kept local, then added to the second's), against the
// same run on the CPU. 40 samples in batches of 8: 5 batches, optimizer steps after batches 2, 4 and 5.
TEST(CnnTrainGpu, AccumulateFollowsTheCpuRun) {
  SKIP_WITHOUT_GPU();
  const std::string root = testing::tiny_folder_dataset("gpu_accumulate");
  const std::string gpu = testing::temp_dir("gpu_accumulate_gpu"),
                    cpu = testing::temp_dir("gpu_accumulate_cpu");
  const std::vector<std::string> more = {"--accumulate", "2", "--limit-train", "40"};
  const testing::RunResult g = run_train(with_args(testing::tiny_folder_args(root, gpu, "cnn3", 8, 1), more));
  ASSERT_EQ(g.exit_code, 0) << g.output;
  EXPECT_NE(g.output.find("[GPU0] Epoch 1 |"), std::string::npos) << g.output;
  EXPECT_NE(g.output.find("Steps: 5 |"), std::string::npos) << g.output;
  EXPECT_EQ(optim::SafetensorsFile::read(gpu + "/last.safetensors").metadata().at("step"), "3");
  const testing::RunResult c =
      run_train(with_args(testing::tiny_folder_args(root, cpu, "cnn3", 8, 1), with_args(more, {"--cpu"})));
  ASSERT_EQ(c.exit_code, 0) << c.output;
  expect_checkpoints_close(gpu + "/last.safetensors", cpu + "/last.safetensors", kGpuVsCpu,
                           "--accumulate 2, CUDA vs CPU");
}

// bf16 gradient compression end to end on CUDA tensors (two gloo ranks sharing GPU 0, the cast kernels on
// the device): against the same two ranks without compression, after ONE step (16 samples, 8 per rank).
// Each rank's gradient g_r is rounded to bf16 (8 significant bits: at most 2^-9 |g_r|), the two are summed
// and the sum rounded again (2^-9 of it), then halved exactly, so each element of the averaged gradient is
// off by at most 2^-9 ((|g_a| + |g_b|) / 2 + |g|) (the fp32 run's own rounding, 2^-24, is far below). After
// one step the momentum buffer is that gradient plus wd p0 (the same in both runs) and a weight moves by lr
// times it, so both differ by that much. |g_a| + |g_b| exceeds 2 |g| where the ranks' gradients disagree in
// sign; the bound takes each rank's gradient elements up to twice the tensor's largest averaged one: 2^-9 (2
// + 1) = 5.9e-3 of each tensor's largest value. The same runs on the CPU (cnn_train --cpu --nproc 2, this
// data, seed and model) differ by at most 4.96e-3 of the largest value (features.9.bias); the first GPU run's
// two-step version of this test differed by exactly the CPU's two-step figures (1.4e-2 of features.8.weight's
// momentum, where the first step's rounding has moved the second step's gradient: not a rounding bound, hence
// one step). The runs must differ somewhere, or nothing was compressed.
TEST(CnnTrainGpu, Bf16GradientCompressionStaysCloseToFloat32) {
  SKIP_WITHOUT_GPU();
  const std::string root = testing::tiny_folder_dataset("gpu_bf16");
  const std::string plain = testing::temp_dir("gpu_bf16_none"), bf16 = testing::temp_dir("gpu_bf16_bf16");
  const std::vector<std::string> two = {"--gpus", "0,0", "--backend", "gloo", "--limit-train", "16"};
  const testing::RunResult a =
      run_train(with_args(testing::tiny_folder_args(root, plain, "cnn3", 8, 1), two));
  ASSERT_EQ(a.exit_code, 0) << a.output;
  const testing::RunResult b = run_train(with_args(testing::tiny_folder_args(root, bf16, "cnn3", 8, 1),
                                                   with_args(two, {"--grad-compression", "bf16"})));
  ASSERT_EQ(b.exit_code, 0) << b.output;
  EXPECT_NE(b.output.find("sent as bf16"), std::string::npos) << b.output;
  constexpr double kBf16Step = 3.0 / 512.0;  // 2^-9 (2 + 1), above
  expect_checkpoints_close(bf16 + "/last.safetensors", plain + "/last.safetensors", kBf16Step,
                           "bf16 vs float32");
  double largest = 0.0;
  for (const auto& d :
       testing::checkpoint_differences(bf16 + "/last.safetensors", plain + "/last.safetensors"))
    largest = std::max(largest, d.worst);
  EXPECT_GT(largest, 0.0) << "bf16 compression changed nothing: were the gradients compressed?";
}

// --resume on CUDA continues bit for bit (deterministic algorithms, the same batches), and --eval-only on
// CUDA reports what the training run's own evaluation reported, and the CPU's evaluation of the same
// checkpoint within the forward tolerance (5e-4 relative, plus the 4-decimal print's 1e-4).
TEST(CnnTrainGpu, ResumeContinuesBitForBitAndEvalOnlyMatchesTheCpu) {
  SKIP_WITHOUT_GPU();
  const std::string root = testing::tiny_folder_dataset("gpu_resume");
  const std::string straight = testing::temp_dir("gpu_resume_straight"),
                    first = testing::temp_dir("gpu_resume_first"),
                    second = testing::temp_dir("gpu_resume_second");
  const testing::RunResult full = run_train(testing::tiny_folder_args(root, straight, "cnn3", 8, 2));
  ASSERT_EQ(full.exit_code, 0) << full.output;
  ASSERT_EQ(run_train(testing::tiny_folder_args(root, first, "cnn3", 8, 1)).exit_code, 0);
  const testing::RunResult resumed = run_train(with_args(
      testing::tiny_folder_args(root, second, "cnn3", 8, 2), {"--resume", first + "/last.safetensors"}));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_EQ(resumed.output.find("Epoch 1 |"), std::string::npos) << resumed.output;
  expect_checkpoints_identical(straight + "/epoch2.safetensors", second + "/epoch2.safetensors",
                               "2 epochs straight vs 1 + --resume + 1 on CUDA");

  const std::string checkpoint = straight + "/epoch2.safetensors";
  const testing::RunResult gpu_eval = run_train(
      {"--dataset", "folder:" + root, "--batch-size", "5", "--precision", "fp32", "--eval-only", checkpoint});
  ASSERT_EQ(gpu_eval.exit_code, 0) << gpu_eval.output;
  EXPECT_NE(gpu_eval.output.find("[GPU0] Eval | Samples: 12 |"), std::string::npos) << gpu_eval.output;
  const testing::RunResult cpu_eval =
      run_train({"--cpu", "--dataset", "folder:" + root, "--batch-size", "5", "--eval-only", checkpoint});
  ASSERT_EQ(cpu_eval.exit_code, 0) << cpu_eval.output;
  const double gpu_loss = number_after(gpu_eval.output, "Test Loss: ");
  const double cpu_loss = number_after(cpu_eval.output, "Test Loss: ");
  EXPECT_NEAR(gpu_loss, cpu_loss, 5e-4 * std::abs(cpu_loss) + 1e-4) << gpu_eval.output << cpu_eval.output;
  // 12 samples, 3 classes: a prediction flips only where two logits agree to ~1e-6; none does here.
  EXPECT_EQ(number_after(gpu_eval.output, "Test Acc: "), number_after(cpu_eval.output, "Test Acc: "));
  // The training run evaluated the same weights on the same device after its last epoch.
  const std::size_t last_epoch = full.output.find("Epoch 2 |");
  ASSERT_NE(last_epoch, std::string::npos) << full.output;
  EXPECT_EQ(number_after(full.output.substr(last_epoch), "Test Acc: "),
            number_after(gpu_eval.output, "Test Acc: "));
}

// Without --deterministic, cnn_train searches cuDNN's algorithms by timing them (cudnnFind, any algorithm):
// the run must still follow the CPU run.
TEST(CnnTrainGpu, BenchmarkSearchFollowsTheCpuRun) {
  SKIP_WITHOUT_GPU();
  const std::string root = testing::tiny_folder_dataset("gpu_benchmark");
  const std::string gpu = testing::temp_dir("gpu_benchmark_gpu"),
                    cpu = testing::temp_dir("gpu_benchmark_cpu");
  std::vector<std::string> args = testing::tiny_folder_args(root, gpu, "resnet18", 8, 1);
  args.erase(std::find(args.begin(), args.end(), "--deterministic"));
  args = with_args(args, {"--limit-train", "24"});
  ::setenv("ENGINE_PRINT_CONV_PLANS", "1", 1);  // cuDNN's choices, printed below when the comparison fails
  const testing::RunResult g = run_train(args);
  ::unsetenv("ENGINE_PRINT_CONV_PLANS");
  ASSERT_EQ(g.exit_code, 0) << g.output;
  EXPECT_NE(g.output.find("[GPU0] Epoch 1 |"), std::string::npos) << g.output;
  const testing::RunResult c = run_train(
      with_args(testing::tiny_folder_args(root, cpu, "resnet18", 8, 1), {"--limit-train", "24", "--cpu"}));
  ASSERT_EQ(c.exit_code, 0) << c.output;
  expect_checkpoints_close(gpu + "/last.safetensors", cpu + "/last.safetensors", kGpuVsCpu,
                           "benchmark search, CUDA vs CPU");
  if (HasFailure()) std::printf("%s", testing::lines_with(g.output, "conv plan").c_str());
}

// SyncBatchNorm over two NCCL ranks on one GPU (NCCL >= 2.30 with NCCL_MULTI_RANK_GPU_ENABLE=1; older NCCL
// refuses two ranks on one device, and the gloo version of this test, CnnTrainDdpGpu.TwoRanksOnOneGpu-
// ThroughGlooFollowTheSingleProcessRun, covers SyncBatchNorm there): two ranks of batch 8 follow one process
// of batch 16, to 1e-4 of each tensor's largest value as in that test (cuDNN picks other algorithms for
// batch 8 and 16, each with ~1e-5 relative error of its own).
TEST(CnnTrainGpu, SyncBatchNormOverTwoNcclRanksOnOneGpuFollowsTheSingleProcessRun) {
  SKIP_WITHOUT_GPU();
  int version = 0;
  NCCL_CHECK(ncclGetVersion(&version));
  if (version < 23000) {
    GTEST_SKIP() << "NCCL " << version << " refuses two ranks on one GPU (2.30 allows it); SyncBatchNorm "
                 << "over gloo ranks is tested by CnnTrainDdpGpu";
  }
  const std::string root = testing::tiny_folder_dataset("gpu_syncbn_nccl");
  const std::string one = testing::temp_dir("gpu_syncbn_one"), two = testing::temp_dir("gpu_syncbn_two");
  const std::vector<std::string> limits = {"--limit-train", "16", "--limit-test", "6"};
  const testing::RunResult single =
      run_train(with_args(testing::tiny_folder_args(root, one, "resnet18", 16, 1), limits));
  ASSERT_EQ(single.exit_code, 0) << single.output;
  ::setenv("NCCL_MULTI_RANK_GPU_ENABLE", "1", 1);
  const testing::RunResult ddp =
      run_train(with_args(testing::tiny_folder_args(root, two, "resnet18", 8, 1),
                          with_args(limits, {"--gpus", "0,0", "--sync-bn", "--timeout", "120"})));
  ::unsetenv("NCCL_MULTI_RANK_GPU_ENABLE");
  ASSERT_EQ(ddp.exit_code, 0) << ddp.output;
  EXPECT_NE(ddp.output.find("2 rank(s) through nccl"), std::string::npos) << ddp.output;
  expect_checkpoints_close(two + "/epoch1.safetensors", one + "/epoch1.safetensors", 1e-4,
                           "SyncBatchNorm on 2 NCCL ranks vs 1 process");
}

// The Trainer in this process, so that the loader path and the device can be chosen (cnn_train takes the
// GPU-resident loader for a dataset in memory, and its device comes from --gpus). On the toy in CIFAR-10's
// format (tiny_cifar_dataset): read into memory, so both loaders can serve it (a folder: dataset is read from
// disk, which only the staged loader does).
TrainConfig in_process_config(const std::string& root, const std::string& checkpoint_dir) {
  TrainConfig c;
  c.dataset = "cifar10";
  c.data_dir = root;
  c.model = "cnn3";
  c.model_given = true;
  c.epochs = 1;
  c.batch_size = 8;
  c.lr = 0.05;
  c.deterministic = true;
  c.seed = 3;
  c.checkpoint_dir = checkpoint_dir;
  return c;
}

// Runs `config` in this process with the outputs cnn_train would attach (the checkpoint policy among them).
void train_in_process(const TrainConfig& config) {
  Trainer trainer(config);
  attach_outputs(trainer);
  trainer.run();
}

// The staged loader (pinned buffers, a copy stream, worker threads) gives the GPU-resident loader's batches
// bit for bit (data/loader.h), so the whole run is the same bit for bit.
TEST(CnnTrainGpu, TrainerWithTheStagedLoaderEqualsTheResidentOne) {
  SKIP_WITHOUT_GPU();
  const std::string root = testing::tiny_cifar_dataset("gpu_staged");
  const std::string resident = testing::temp_dir("gpu_staged_resident"),
                    staged = testing::temp_dir("gpu_staged_staged");
  train_in_process(in_process_config(root, resident));
  TrainConfig c = in_process_config(root, staged);
  c.gpu_resident_data = false;
  train_in_process(c);
  expect_checkpoints_identical(resident + "/last.safetensors", staged + "/last.safetensors",
                               "staged vs GPU-resident loader");
}

// A device other than cuda:0: everything the run allocates is on cuda:1 (cuda:0's allocator is not used),
// and the result is cuda:0's, bit for bit on two GPUs of the same model (the same algorithms), else within
// the GPU-vs-CPU bound.
TEST(CnnTrainGpu, TrainerOnTheSecondGpuMatchesTheFirst) {
  SKIP_WITHOUT_GPU();
  if (device_count() < 2) GTEST_SKIP() << "needs two GPUs, " << device_count() << " visible";
  const std::string root = testing::tiny_cifar_dataset("gpu_second");
  const std::string first = testing::temp_dir("gpu_second_0"), second = testing::temp_dir("gpu_second_1");
  train_in_process(in_process_config(root, first));
  const AllocatorStats before = device_allocator(0).stats();
  device_allocator(1).reset_peak();
  TrainConfig c = in_process_config(root, second);
  c.device_index = 1;
  train_in_process(c);
  const AllocatorStats after = device_allocator(0).stats();
  EXPECT_EQ(after.driver_allocs, before.driver_allocs) << "the cuda:1 run allocated on cuda:0";
  EXPECT_EQ(after.peak_bytes_in_use, before.peak_bytes_in_use) << "the cuda:1 run used cuda:0's memory";
  EXPECT_GT(device_allocator(1).stats().peak_bytes_in_use, 0u);
  set_device(0);
  cudaDeviceProp p0{}, p1{};
  CUDA_CHECK(cudaGetDeviceProperties(&p0, 0));
  CUDA_CHECK(cudaGetDeviceProperties(&p1, 1));
  if (std::string(p0.name) == p1.name) {
    expect_checkpoints_identical(first + "/last.safetensors", second + "/last.safetensors",
                                 "cuda:1 vs cuda:0");
  } else {
    expect_checkpoints_close(second + "/last.safetensors", first + "/last.safetensors", kGpuVsCpu,
                             "cuda:1 vs cuda:0 (different GPU models)");
  }
}

}  // namespace
}  // namespace engine::apps
