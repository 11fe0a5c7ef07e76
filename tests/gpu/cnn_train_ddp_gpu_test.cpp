// cnn_train's distributed data parallel on a GPU (label gpu; skipped where no device is visible), on the tiny
// image-folder dataset the tests write (the graph test: the same toy in CIFAR-10's format, in memory): NCCL
// with world size 1 end to end, and its captured steps (the Reducer's side stream inside a CUDA graph) equal
// to its eager ones; two ranks sharing GPU 0 through gloo following the single-process run of the
// concatenated batch; two NCCL ranks on one GPU (NCCL >= 2.30).

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nccl.h>

#include "core/cuda_check.h"
#include "optim/safetensors.h"
#include "tests/common/gpu.h"
#include "tests/cpu/cnn_train_test_util.h"
#include "tests/cpu/tiny_cifar_dataset.h"

namespace engine::apps {
namespace {

using testing::run_train;
using testing::with_args;

TEST(CnnTrainDdpGpu, NcclWorldSizeOneTrainsEndToEnd) {
  SKIP_WITHOUT_GPU();
  const std::string root = testing::tiny_folder_dataset("gpu_nccl1");
  const std::string dir = testing::temp_dir("gpu_nccl1_out");
  const testing::RunResult r =
      run_train(with_args(testing::tiny_folder_args(root, dir, "cnn3", 8, 1), {"--gpus", "0"}));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("1 rank(s) through nccl"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("[GPU0] Epoch 1 |"), std::string::npos) << r.output;
  EXPECT_TRUE(std::filesystem::exists(dir + "/last.safetensors"));
}

// The in-graph NCCL path on a one-GPU machine: in a world of one the Reducer still forks its side stream off
// the captured step (an event), all-reduces each bucket there and joins back before SGD. A missing join or a
// bucket read before its gradient is written shows as a difference from the eager run (CudaGraphProgram's
// two-rank test needs two GPUs). The toy in CIFAR-10's format: graphs need the GPU-resident loader, which a
// folder: dataset (read from disk) does not get.
TEST(CnnTrainDdpGpu, NcclWorldOfOneCapturedStepsEqualEagerSteps) {
  SKIP_WITHOUT_GPU();
  const std::string root = testing::tiny_cifar_dataset("gpu_nccl1_graph");
  const std::string off = testing::temp_dir("gpu_nccl1_graph_off"),
                    on = testing::temp_dir("gpu_nccl1_graph_on");
  for (const auto& [dir, mode] : {std::pair{off, "off"}, std::pair{on, "on"}}) {
    const testing::RunResult r = run_train(
        with_args(testing::tiny_cifar_args(root, dir, "cnn3", 8, 2), {"--gpus", "0", "--cuda-graph", mode}));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("1 rank(s) through nccl"), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("CUDA graph: the training step is captured") != std::string::npos,
              std::string_view(mode) == "on")
        << r.output;
  }
  for (const testing::TensorDifference& d :
       testing::checkpoint_differences(off + "/epoch2.safetensors", on + "/epoch2.safetensors")) {
    EXPECT_EQ(d.worst, 0.0) << d.name << " differs by " << d.worst;
  }
}

// As the CPU test CnnTrainDdp.TwoRanksWithSyncBnFollowTheSingleProcessRunOfTheConcatenatedBatch, on GPU 0:
// one SGD step of resnet18 with SyncBN, two ranks of batch 8 against one process of batch 16. The bound is
// 1e-4 of each tensor's largest value rather than the CPU's 1e-5: cuDNN's algorithms differ between batch 8
// and 16 and carry about 1e-5 relative error of their own.
// Known limit (the first GPU run failed here): that argument holds only while no ReLU input lies within
// those roundings of 0. One that does flips between the runs and moves its channel's gradient by its whole
// dy: the first GPU run differed by 1.065e-3 of 1.484e-2 in layer4.1.conv2's momentum, all of it in output
// channel 33, which is to 3-5 digits what the CPU gives for the same step with oneDNN's Winograd against its
// direct convolution (both runs --cpu, this data and seed), where the difference sits in channel 33 of
// layer4.1.bn2 alone (1.0e-4 in its bias's momentum, 4e-9 in every other channel): the block's last ReLU,
// channel 33, has an input within rounding of 0. A failure prints where each difference sits and the
// largest one elsewhere: one element far above the rest is such a flip, not SyncBatchNorm's arithmetic
// (whose kernels match the float64 reference in sync_batchnorm_gpu_test.cpp).
TEST(CnnTrainDdpGpu, TwoRanksOnOneGpuThroughGlooFollowTheSingleProcessRun) {
  SKIP_WITHOUT_GPU();
  const std::string root = testing::tiny_folder_dataset("gpu_gloo2");
  const std::string one = testing::temp_dir("gpu_gloo2_one"), two = testing::temp_dir("gpu_gloo2_two");
  const std::vector<std::string> limits = {"--limit-train", "16", "--limit-test", "6"};
  ::setenv("ENGINE_PRINT_CONV_PLANS", "1", 1);  // cuDNN's choices, printed below when the comparison fails
  const testing::RunResult single =
      run_train(with_args(testing::tiny_folder_args(root, one, "resnet18", 16, 1), limits));
  ASSERT_EQ(single.exit_code, 0) << single.output;
  const testing::RunResult ddp =
      run_train(with_args(testing::tiny_folder_args(root, two, "resnet18", 8, 1),
                          with_args(limits, {"--gpus", "0,0", "--backend", "gloo", "--sync-bn"})));
  ::unsetenv("ENGINE_PRINT_CONV_PLANS");
  ASSERT_EQ(ddp.exit_code, 0) << ddp.output;
  EXPECT_NE(ddp.output.find("2 rank(s) through gloo"), std::string::npos) << ddp.output;

  for (const testing::TensorDifference& d :
       testing::checkpoint_differences(one + "/epoch1.safetensors", two + "/epoch1.safetensors")) {
    EXPECT_LE(d.worst, 1e-4 * d.scale) << testing::describe(d);
  }
  if (HasFailure()) {
    std::printf("one process:\n%stwo ranks:\n%s", testing::lines_with(single.output, "conv plan").c_str(),
                testing::lines_with(ddp.output, "conv plan").c_str());
  }
}

// The DDP issue asks to try two NCCL ranks on one GPU: NCCL 2.30 and newer allow it with
// NCCL_MULTI_RANK_GPU_ENABLE=1 (and cnn_train then lets a repeated --gpus id through); older versions refuse
// at communicator creation, which must end the run with a message, not a hang. The test checks whichever
// applies to the NCCL it runs with, and prints which it was.
TEST(CnnTrainDdpGpu, TwoNcclRanksOnOneGpuWorkFromNccl230OrFailClearly) {
  SKIP_WITHOUT_GPU();
  int version = 0;
  NCCL_CHECK(ncclGetVersion(&version));  // X*10000 + Y*100 + Z since NCCL 2.9
  const bool allowed = version >= 23000;
  const std::string root = testing::tiny_folder_dataset("gpu_nccl_shared");
  ::setenv("NCCL_MULTI_RANK_GPU_ENABLE", "1", 1);
  const testing::RunResult r = run_train(
      with_args(testing::tiny_folder_args(root, testing::temp_dir("gpu_nccl_shared_out"), "cnn3", 8, 1),
                {"--gpus", "0,0", "--timeout", "60"}));
  ::unsetenv("NCCL_MULTI_RANK_GPU_ENABLE");
  std::printf("NCCL %d: two NCCL ranks on one GPU %s (exit %d)\n", version,
              r.exit_code == 0 ? "work" : "refused", r.exit_code);
  if (allowed) {
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("2 rank(s) through nccl"), std::string::npos) << r.output;
  } else {
    EXPECT_NE(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("[rank "), std::string::npos) << "the failing rank is named:\n" << r.output;
  }
}

}  // namespace
}  // namespace engine::apps
