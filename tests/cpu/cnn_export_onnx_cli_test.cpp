// cnn_export_onnx's answers to an --output it could never write (../shared/BAD_INPUTS.md, "Command line"):
// exit 2 naming the path, before the checkpoint is read, and no FILE.partial left behind. Runs the real
// program (tests/cpu/cnn_train_test_util.h); the checkpoint need not exist, as the flag is refused first.

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "tests/cpu/cnn_train_test_util.h"

namespace engine::apps {
namespace {

TEST(CnnExportOnnxCli, AnOutputThatIsAFolderIsRefusedLeavingNoPartialFile) {
  const std::string folder = testing::temp_dir("export_onnx_folder");
  const testing::RunResult r = testing::run_program(
      "cnn_export_onnx", {"--checkpoint", folder + "/none.safetensors", "--output", folder});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--output: '" + folder + "' is a folder"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(folder + ".partial")) << r.output;
}

TEST(CnnExportOnnxCli, AnOutputInAFolderThatDoesNotExistIsRefused) {
  const std::string folder = testing::temp_dir("export_onnx_missing") + "/absent";
  const testing::RunResult r = testing::run_program(
      "cnn_export_onnx", {"--checkpoint", folder + "/none.safetensors", "--output", folder + "/m.onnx"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("'" + folder + "', does not exist"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace engine::apps
