// cnn_train --layout nhwc end to end on the CPU (the tiny image folder): it trains to the losses of an
// NCHW run (the same kernels between exact transposes; see tests/cpu/nhwc_model_test.cpp), and its
// checkpoint evaluates in an NCHW run, since weights and Linear features keep PyTorch's order. The same with
// bf16 activations.

#include <algorithm>
#include <iterator>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/cpu/cnn_train_test_util.h"

namespace engine::apps {
namespace {

namespace train = apps::testing;

std::vector<double> train_losses(const std::string& metrics) {
  std::vector<double> out;
  const std::string key = "\"train_loss\":";
  for (std::size_t at = metrics.find(key); at != std::string::npos; at = metrics.find(key, at + 1)) {
    out.push_back(std::stod(metrics.substr(at + key.size())));
  }
  return out;
}

// precision: null for tiny_folder_args' own.
std::vector<double> run(const std::string& root, const std::string& dir, const char* layout,
                        const char* precision = nullptr) {
  std::vector<std::string> args = train::tiny_folder_args(root, dir, "cnn3", 8, 2);
  if (precision != nullptr) {
    const auto flag = std::find(args.begin(), args.end(), "--precision");
    EXPECT_NE(flag, args.end());
    if (flag != args.end()) *std::next(flag) = precision;
  }
  args.insert(args.end(), {"--cpu", "--layout", layout, "--metrics", dir + "/m.jsonl"});
  const train::RunResult r = train::run_train(args);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return train_losses(train::file_bytes(dir + "/m.jsonl"));
}

TEST(CnnTrainLayout, NhwcTrainsLikeNchwAndItsCheckpointEvaluatesInNchw) {
  const std::string root = train::tiny_folder_dataset("layout_train");
  const std::string nhwc_dir = train::temp_dir("layout_nhwc"), nchw_dir = train::temp_dir("layout_nchw");
  const std::vector<double> nhwc = run(root, nhwc_dir, "nhwc"), nchw = run(root, nchw_dir, "nchw");
  ASSERT_EQ(nhwc.size(), 2u);
  ASSERT_EQ(nchw.size(), 2u);
  // Float32 through two epochs: threaded reductions may order sums differently, and training amplifies
  // that without a useful bound; 1e-3 relative is a guard against a layout computing something else.
  for (std::size_t e = 0; e < 2; ++e) EXPECT_NEAR(nhwc[e], nchw[e], 1e-3 * nchw[e]) << "epoch " << e + 1;
  const train::RunResult eval =
      train::run_train({"--cpu", "--dataset", "folder:" + root, "--model", "cnn3", "--layout", "nchw",
                        "--eval-only", nhwc_dir + "/epoch2.safetensors"});
  EXPECT_EQ(eval.exit_code, 0) << eval.output;
  EXPECT_NE(eval.output.find("Test Acc: "), std::string::npos) << eval.output;
}

// --layout nchw16c and nchw8c (the CPU's blocked activations, core/layout.h): cnn3 trains like NCHW (the same
// oneDNN convolutions; BatchNorm's sums in another order: tests/cpu/blocked_model_test.cpp), with the same
// 1e-3 guard as NHWC above, and its checkpoint evaluates in NCHW.
TEST(CnnTrainLayout, BlockedTrainsLikeNchwAndItsCheckpointEvaluatesInNchw) {
  const std::string root = train::tiny_folder_dataset("layout_blocked_train");
  const std::vector<double> nchw = run(root, train::temp_dir("layout_blocked_nchw"), "nchw");
  ASSERT_EQ(nchw.size(), 2u);
  for (const char* layout : {"nchw16c", "nchw8c"}) {
    const std::string dir = train::temp_dir(std::string("layout_") + layout);
    const std::vector<double> blocked = run(root, dir, layout);
    ASSERT_EQ(blocked.size(), 2u) << layout;
    for (std::size_t e = 0; e < 2; ++e)
      EXPECT_NEAR(blocked[e], nchw[e], 1e-3 * nchw[e]) << layout << " epoch " << e + 1;
    const train::RunResult eval = train::run_train({"--cpu", "--dataset", "folder:" + root, "--model", "cnn3",
                                                    "--eval-only", dir + "/epoch2.safetensors"});
    EXPECT_EQ(eval.exit_code, 0) << eval.output;
    EXPECT_NE(eval.output.find("Test Acc: "), std::string::npos) << eval.output;
  }
}

// --precision bf16 --layout nhwc: bf16 activations in channels-last order train like bf16 in NCHW (the
// same guard as above), and the checkpoint (fp32, PyTorch's names and layouts) evaluates in an fp32 NCHW run.
TEST(CnnTrainLayout, Bf16InNhwcTrainsLikeBf16InNchw) {
  const std::string root = train::tiny_folder_dataset("layout_bf16");
  const std::string nhwc_dir = train::temp_dir("layout_bf16_nhwc"),
                    nchw_dir = train::temp_dir("layout_bf16_nchw");
  const std::vector<double> nhwc = run(root, nhwc_dir, "nhwc", "bf16"),
                            nchw = run(root, nchw_dir, "nchw", "bf16");
  ASSERT_EQ(nhwc.size(), 2u);
  ASSERT_EQ(nchw.size(), 2u);
  for (std::size_t e = 0; e < 2; ++e) EXPECT_NEAR(nhwc[e], nchw[e], 1e-3 * nchw[e]) << "epoch " << e + 1;
  const train::RunResult eval =
      train::run_train({"--cpu", "--dataset", "folder:" + root, "--model", "cnn3", "--layout", "nchw",
                        "--precision", "fp32", "--eval-only", nhwc_dir + "/epoch2.safetensors"});
  EXPECT_EQ(eval.exit_code, 0) << eval.output;
  EXPECT_NE(eval.output.find("Test Acc: "), std::string::npos) << eval.output;
}

}  // namespace
}  // namespace engine::apps
