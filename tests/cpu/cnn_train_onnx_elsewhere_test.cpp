// A checkpoint of a model imported from ONNX, used from another folder (issue 44, defect 4): cnn_train
// records the .onnx file by its absolute path, so cnn_predict and cnn_export_onnx run from anywhere; when the
// file is gone they say which file the checkpoint needs. The extension is taken in any case (my_net.ONNX).

#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "layers/onnx/onnx_model.h"
#include "optim/safetensors.h"
#include "tests/common/onnx_skip.h"
#include "tests/common/onnx_small_net.h"
#include "tests/cpu/cnn_train_test_util.h"

namespace engine::apps {
namespace {

using testing::shell_quote;

// `program` ARGS run from the folder `cwd`.
testing::RunResult run_in(const std::string& cwd, const std::string& program,
                          const std::vector<std::string>& args) {
  std::string command = "cd " + shell_quote(cwd) + " && " + shell_quote(testing::program_path(program));
  for (const std::string& a : args) command.append(" ").append(shell_quote(a));
  return testing::run_command(std::move(command));
}

TEST(CnnTrainOnnxElsewhere, ACheckpointOfARelativeOnnxModelWorksFromAnotherFolder) {
  SKIP_WITHOUT_ONNX();
  const std::string root = testing::tiny_folder_dataset("onnx_elsewhere_data");
  const std::string work = testing::temp_dir("onnx_elsewhere_work"),
                    other = testing::temp_dir("onnx_elsewhere_other");
  std::filesystem::create_directories(work + "/rel");
  std::filesystem::rename(engine::testing::small_net_onnx(work, 3), work + "/rel/my_net.ONNX");
  const std::string ckpt = work + "/ckpt";
  testing::RunResult r = run_in(work, "cnn_train",
                                {"--cpu", "--dataset", "folder:" + root, "--model", "rel/my_net.ONNX",
                                 "--epochs", "1", "--batch-size", "8", "--checkpoint-dir", ckpt});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string absolute = work + "/rel/my_net.ONNX";
  EXPECT_EQ(optim::SafetensorsFile::read(ckpt + "/last.safetensors").metadata().at("model"), absolute);

  r = run_in(other, "cnn_predict",
             {"--checkpoint", ckpt + "/last.safetensors", root + "/test/class_b/0.png"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("class_"), std::string::npos) << r.output;
  r = run_in(other, "cnn_export_onnx",
             {"--checkpoint", ckpt + "/last.safetensors", "--output", "trained.onnx"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(std::filesystem::exists(other + "/trained.onnx")) << r.output;

  std::filesystem::remove(absolute);
  r = run_in(other, "cnn_predict",
             {"--checkpoint", ckpt + "/last.safetensors", root + "/test/class_b/0.png"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("holds the weights of the ONNX model '" + absolute +
                          "', whose graph is read from that file, and it is not there"),
            std::string::npos)
      << r.output;
}

}  // namespace
}  // namespace engine::apps
