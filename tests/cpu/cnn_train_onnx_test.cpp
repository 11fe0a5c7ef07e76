// cnn_train on a model read from an ONNX file (--model FILE.onnx), as a user would run it: training,
// checkpoints and an exact --resume, --eval-only, two CPU ranks with SyncBN following one process, and
// cnn_export_onnx writing the trained model back out. The file is written by the engine's exporter from a
// small residual net (tests/common/onnx_small_net.h). Skips in builds without libonnx-dev.

#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "layers/onnx/onnx_model.h"
#include "optim/safetensors.h"
#include "tests/common/onnx_skip.h"
#include "tests/common/onnx_small_net.h"
#include "tests/cpu/cnn_train_test_util.h"
#include "tests/cpu/layer_test_util.h"

namespace engine::apps {
namespace {

using engine::testing::small_net_onnx;
using testing::file_bytes;
using testing::run_train;
using testing::with_args;

std::vector<std::string> onnx_run(const std::string& root, const std::string& ckpt, const std::string& model,
                                  int batch, int epochs) {
  return with_args({"--cpu"}, testing::tiny_folder_args(root, ckpt, model, batch, epochs));
}

class CnnTrainOnnx : public ::testing::Test {
 protected:
  void SetUp() override { SKIP_WITHOUT_ONNX(); }
};

TEST_F(CnnTrainOnnx, TrainsResumesEvaluatesAndExports) {
  const std::string root = testing::tiny_folder_dataset("onnx_train");
  const std::string files = testing::temp_dir("onnx_files"), straight = testing::temp_dir("onnx_straight"),
                    first = testing::temp_dir("onnx_first"), second = testing::temp_dir("onnx_second");
  const std::string net = small_net_onnx(files, 3);

  const testing::RunResult r = run_train(onnx_run(root, straight, net, 8, 2));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("Epoch 2 |"), std::string::npos) << r.output;
  // The checkpoint holds the file's names: stem.0.weight, 2.conv... as the exporter wrote them.
  const optim::SafetensorsFile ckpt = optim::SafetensorsFile::read(straight + "/epoch2.safetensors");
  EXPECT_EQ(ckpt.metadata().at("model"), net);

  // 1 epoch, then --resume for the second: byte-identical to 2 epochs straight.
  ASSERT_EQ(run_train(onnx_run(root, first, net, 8, 1)).exit_code, 0);
  const testing::RunResult resumed =
      run_train(with_args(onnx_run(root, second, net, 8, 2), {"--resume", first + "/last.safetensors"}));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_TRUE(file_bytes(straight + "/epoch2.safetensors") == file_bytes(second + "/epoch2.safetensors"));

  const testing::RunResult eval = run_train({"--cpu", "--dataset", "folder:" + root, "--batch-size", "8",
                                             "--eval-only", straight + "/epoch2.safetensors"});
  ASSERT_EQ(eval.exit_code, 0) << eval.output;
  EXPECT_NE(eval.output.find("Test Acc: "), std::string::npos) << eval.output;

  // The trained model written out again, and read back by cnn_train.
  const std::string out = files + "/trained.onnx";
  const testing::RunResult exported = testing::run_program(
      "cnn_export_onnx", {"--checkpoint", straight + "/epoch2.safetensors", "--output", out});
  ASSERT_EQ(exported.exit_code, 0) << exported.output;
  EXPECT_EQ(run_train(onnx_run(root, testing::temp_dir("onnx_again"), out, 8, 1)).exit_code, 0);
}

// Two ranks of batch 4 with SyncBN take the step of one process of batch 8 (as the zoo models do:
// tests/cpu/cnn_train_ddp_test.cpp, whose tolerance this shares: float32 sums in other orders).
TEST_F(CnnTrainOnnx, TwoRanksWithSyncBnFollowOneProcess) {
  const std::string root = testing::tiny_folder_dataset("onnx_ddp");
  const std::string files = testing::temp_dir("onnx_ddp_files"), one = testing::temp_dir("onnx_ddp_one"),
                    two = testing::temp_dir("onnx_ddp_two");
  const std::string net = small_net_onnx(files, 3);
  const std::vector<std::string> limits = {"--limit-train", "8", "--limit-test", "6"};
  const testing::RunResult single = run_train(with_args(onnx_run(root, one, net, 8, 1), limits));
  ASSERT_EQ(single.exit_code, 0) << single.output;
  const testing::RunResult ddp =
      run_train(with_args(onnx_run(root, two, net, 4, 1), with_args(limits, {"--nproc", "2", "--sync-bn"})));
  ASSERT_EQ(ddp.exit_code, 0) << ddp.output;
  const std::vector<testing::TensorDifference> diffs =
      testing::checkpoint_differences(one + "/epoch1.safetensors", two + "/epoch1.safetensors");
  EXPECT_GT(diffs.size(), 10U);
  for (const testing::TensorDifference& d : diffs) {
    EXPECT_LE(d.worst, 1e-5 * d.scale)
        << d.name << ": largest difference " << d.worst << " of values up to " << d.scale;
  }
}

TEST_F(CnnTrainOnnx, RefusesAMissingFileAndAWrongClassCount) {
  const std::string root = testing::tiny_folder_dataset("onnx_bad");
  const std::string files = testing::temp_dir("onnx_bad_files");
  const testing::RunResult missing =
      run_train(onnx_run(root, testing::temp_dir("onnx_bad_a"), files + "/missing.onnx", 8, 1));
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_NE(missing.output.find(files + "/missing.onnx"), std::string::npos) << missing.output;
  const testing::RunResult classes =
      run_train(onnx_run(root, testing::temp_dir("onnx_bad_b"), small_net_onnx(files, 10), 8, 1));
  EXPECT_NE(classes.exit_code, 0);
  EXPECT_NE(classes.output.find("the data has 3 classes"), std::string::npos) << classes.output;
}

// Transfer learning: a 10-class file trained on the 3 classes of the data with --new-head, everything but
// the new classifier frozen by --param-group: the classifier's weights are [3, 8] and trained, every other
// parameter keeps the file's values. Without --new-head the class count is refused naming the flag; a zoo
// model is refused with it.
TEST_F(CnnTrainOnnx, NewHeadTrainsTheClassifierWithTheRestFrozen) {
  const std::string root = testing::tiny_folder_dataset("onnx_head");
  const std::string files = testing::temp_dir("onnx_head_files"), ckpt = testing::temp_dir("onnx_head_ckpt");
  const std::string net = small_net_onnx(files, 10);
  const std::vector<std::string> freeze = {"--new-head",    "--param-group",    "Linear.weight:lr=1",
                                           "--param-group", "Linear.bias:lr=1", "--param-group",
                                           ".:frozen"};
  const testing::RunResult r = run_train(with_args(onnx_run(root, ckpt, net, 8, 1), freeze));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const optim::SafetensorsFile trained = optim::SafetensorsFile::read(ckpt + "/epoch1.safetensors");
  layers::Model file = layers::onnx::import_model(net, {});
  file.finalize(layers::testing::cpu_context(), 1);
  int heads = 0, kept = 0;
  for (const layers::Parameter& p : file.parameters()) {
    const optim::SafetensorsFile::Entry* e = trained.find(p.name);
    ASSERT_NE(e, nullptr) << p.name << ": the file's name kept";
    const std::vector<double> values = testing::entry_values(trained, *e);
    if (p.layer->kind() == "Linear") {
      ++heads;
      EXPECT_EQ(values.size(), p.name.ends_with("weight") ? 3U * 8U : 3U) << p.name;
    } else {
      ++kept;
      EXPECT_EQ(values, layers::testing::host_values(p.value)) << p.name << ": frozen at the file's values";
    }
  }
  EXPECT_EQ(heads, 2);
  EXPECT_GT(kept, 5);
  // The checkpoint says the head was replaced: --eval-only and cnn_export_onnx rebuild the same model.
  const testing::RunResult eval = run_train({"--cpu", "--dataset", "folder:" + root, "--batch-size", "8",
                                             "--eval-only", ckpt + "/epoch1.safetensors"});
  EXPECT_EQ(eval.exit_code, 0) << eval.output;
  const testing::RunResult exported = testing::run_program(
      "cnn_export_onnx", {"--checkpoint", ckpt + "/epoch1.safetensors", "--output", files + "/head.onnx"});
  EXPECT_EQ(exported.exit_code, 0) << exported.output;

  const testing::RunResult without = run_train(onnx_run(root, testing::temp_dir("onnx_head_b"), net, 8, 1));
  EXPECT_NE(without.exit_code, 0);
  EXPECT_NE(without.output.find("(--new-head replaces its classifier"), std::string::npos) << without.output;
  const testing::RunResult zoo =
      run_train(with_args(onnx_run(root, testing::temp_dir("onnx_head_c"), "cnn3", 8, 1), {"--new-head"}));
  EXPECT_EQ(zoo.exit_code, 2) << zoo.output;
  EXPECT_NE(
      zoo.output.find("--new-head replaces an ONNX model's classifier; --model cnn3 is not an ONNX file"),
      std::string::npos)
      << zoo.output;
}

}  // namespace
}  // namespace engine::apps
