// cnn_train on a model read from an ONNX file, on the GPU (label gpu; skipped without a device or without
// libonnx): the CPU test (tests/cpu/cnn_train_onnx_test.cpp) shows the importer's model trains, resumes and
// runs on two ranks on the CPU; this shows every GPU mode takes that model (its BatchNorm+ReLU pairs fused,
// as in every run): float32 and NHWC follow the CPU run, a CUDA graph equals eager bit for bit, bf16 stays
// near float32, and two ranks on GPU 0 with SyncBN follow one process.
//
// Tolerances, as in tests/gpu/cnn_train_gpu_test.cpp (whose header argues them): a CUDA float32 run within
// 2e-3 of each tensor's largest value of the CPU run; two runs on the same device with deterministic
// algorithms and the same batches, byte for byte. bf16 activations: 2^-5 of the largest value (8 bf16 ulps,
// the bound tests/gpu/cuda_nhwc_test.cpp argues for one step, and the run's few steps move each weight by a
// fraction of its size). SyncBN over two gloo ranks of batch 4 against one process of batch 8: 1e-4 (float32
// sums in other orders on two CUDA runs, as CnnTrainDdpGpu).
//
// Data: every mode runs on the toy in CIFAR-10's format (tiny_cifar_dataset, read into memory: the
// GPU-resident loader, which --cuda-graph needs, so the graph run and the eager one read the same batches);
// the two-rank test on the image folder (read from disk: the staged loader).

#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "layers/onnx/onnx_model.h"
#include "tests/common/gpu.h"
#include "tests/common/onnx_skip.h"
#include "tests/common/onnx_small_net.h"
#include "tests/cpu/cnn_train_test_util.h"
#include "tests/cpu/tiny_cifar_dataset.h"

namespace engine::apps {
namespace {

using testing::file_bytes;
using testing::run_train;
using testing::with_args;

void expect_close(const std::string& a, const std::string& b, double relative, const std::string& what) {
  const std::vector<testing::TensorDifference> diffs = testing::checkpoint_differences(a, b);
  ASSERT_GT(diffs.size(), 10U) << what << ": " << a << " or " << b << " holds too few tensors";
  for (const testing::TensorDifference& d : diffs) {
    EXPECT_LE(d.worst, relative * d.scale)
        << what << ": " << d.name << ": largest difference " << d.worst << " of values up to " << d.scale;
  }
}

class CnnTrainOnnxGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    SKIP_WITHOUT_ONNX();
    SKIP_WITHOUT_GPU();
    root_ = testing::tiny_folder_dataset("onnx_gpu");
    net_ = engine::testing::small_net_onnx(testing::temp_dir("onnx_gpu_files"), 3);
  }
  // 2 epochs of batch 8 on the CIFAR-format toy with the model from the file (CIFAR-10's 10 classes); `more`
  // are extra flags (a --precision replaces the fp32 of tiny_run_args). The checkpoint folder's final
  // checkpoint, after the run passed.
  std::string train(const std::string& name, const std::vector<std::string>& more) {
    if (cifar_root_.empty()) {
      cifar_root_ = testing::tiny_cifar_dataset("onnx_gpu_cifar");
      cifar_net_ = engine::testing::small_net_onnx(testing::temp_dir("onnx_gpu_cifar_files"), 10);
    }
    const std::string dir = testing::temp_dir("onnx_gpu_" + name);
    std::vector<std::string> args = testing::tiny_cifar_args(cifar_root_, dir, cifar_net_, 8, 2);
    if (std::find(more.begin(), more.end(), "--precision") != more.end()) {
      args = testing::without_option(args, "--precision");
    }
    const testing::RunResult r = run_train(with_args(args, more));
    EXPECT_EQ(r.exit_code, 0) << name << ":\n" << r.output;
    outputs_.push_back(r.output);
    return dir + "/epoch2.safetensors";
  }
  std::string root_, net_;              // the image folder (3 classes) and its net
  std::string cifar_root_, cifar_net_;  // the CIFAR-format toy (10 classes) and its net, made by train()
  std::vector<std::string> outputs_;
};

TEST_F(CnnTrainOnnxGpu, EveryGpuModeTrainsTheImportedModelAsTheCpuDoes) {
  const std::string cpu = train("cpu", {"--cpu"});
  const std::string fp32 = train("fp32", {});
  ASSERT_NE(outputs_.back().find("[GPU0] Epoch 2 |"), std::string::npos) << outputs_.back();
  expect_close(fp32, cpu, 2e-3, "CUDA float32 vs CPU");
  expect_close(train("nhwc", {"--layout", "nhwc"}), cpu, 2e-3, "CUDA NHWC vs CPU");
  const std::string graph = train("graph", {"--cuda-graph", "on"});
  EXPECT_NE(outputs_.back().find("CUDA graph: the training step is captured"), std::string::npos)
      << outputs_.back();
  EXPECT_TRUE(file_bytes(graph) == file_bytes(fp32)) << "--cuda-graph on differs from eager";
  expect_close(train("bf16", {"--precision", "bf16"}), fp32, 0.03125, "bf16 vs float32 on CUDA");
}

TEST_F(CnnTrainOnnxGpu, TwoRanksOnOneGpuWithSyncBnFollowOneProcess) {
  const std::vector<std::string> limits = {"--limit-train", "16", "--limit-test", "6"};
  const std::string one = testing::temp_dir("onnx_gpu_one"), two = testing::temp_dir("onnx_gpu_two");
  const testing::RunResult single =
      run_train(with_args(testing::tiny_folder_args(root_, one, net_, 8, 1), limits));
  ASSERT_EQ(single.exit_code, 0) << single.output;
  const testing::RunResult ddp = run_train(
      with_args(testing::tiny_folder_args(root_, two, net_, 4, 1),
                with_args(limits, {"--gpus", "0,0", "--backend", "gloo", "--sync-bn", "--timeout", "120"})));
  ASSERT_EQ(ddp.exit_code, 0) << ddp.output;
  expect_close(two + "/epoch1.safetensors", one + "/epoch1.safetensors", 1e-4,
               "2 gloo ranks with SyncBN vs 1");
}

}  // namespace
}  // namespace engine::apps
