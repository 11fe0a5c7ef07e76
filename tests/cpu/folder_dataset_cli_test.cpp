// folder:PATH datasets through the programs (issue 44, defects 1 and 5; issue 42): cnn_train matches the
// test split's classes to the training split's by name before anything runs, cnn_data reads PATH/train and
// PATH/test as cnn_train does (--split honoured), and a folder trains at --image-size from disk.

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "tests/cpu/cnn_train_test_util.h"

namespace engine::apps {
namespace {

using testing::run_program;
using testing::run_train;

// A copy of tiny_folder_dataset whose test split holds `test_classes` (their images: class_a's).
std::string folder_with_test_classes(const std::string& name, const std::vector<std::string>& test_classes) {
  std::string root = testing::tiny_folder_dataset(name, 4);  // not const: returned by move
  const std::filesystem::path test = std::filesystem::path(root) / "test";
  const std::filesystem::path source = test / "class_a";
  const std::filesystem::path keep = std::filesystem::path(root) / "source_a";
  std::filesystem::rename(source, keep);
  std::filesystem::remove_all(test);
  for (const std::string& c : test_classes) {
    std::filesystem::create_directories(test);
    std::filesystem::copy(keep, test / c, std::filesystem::copy_options::recursive);
  }
  std::filesystem::remove_all(keep);
  return root;
}

TEST(FolderDatasetCli, TestClassMissingFromTrainingIsRefusedBeforeTraining) {
  const std::string root = folder_with_test_classes("folder_cli_extra", {"class_a", "triangle"});
  const testing::RunResult r = run_train(
      {"--cpu", "--dataset", "folder:" + root, "--epochs", "1", "--batch-size", "4", "--checkpoint-dir", ""});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("class 'triangle' is not one of the training split's classes"), std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("epoch 1"), std::string::npos) << "refused before any training: " << r.output;
  std::filesystem::remove_all(root);
}

TEST(FolderDatasetCli, TestSplitLackingClassesTrainsWithTheTrainingLabels) {
  const std::string root = folder_with_test_classes("folder_cli_fewer", {"class_c"});
  const std::string confusion = root + "/confusion.png";
  const testing::RunResult r =
      run_train({"--cpu", "--dataset", "folder:" + root, "--model", "cnn3", "--epochs", "1", "--batch-size",
                 "4", "--checkpoint-dir", "", "--metrics", root + "/m.jsonl", "--confusion", confusion});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // The confusion matrix is over the training split's three classes; the test images (class_c's folder)
  // sit in row 2.
  const std::string metrics = testing::file_bytes(root + "/m.jsonl");
  EXPECT_NE(metrics.find(
                "\"classes\": [\"class_a\", \"class_b\", \"class_c\"], \"counts\": [[0, 0, 0], [0, 0, 0], ["),
            std::string::npos)
      << metrics;
  std::filesystem::remove_all(root);
}

TEST(FolderDatasetCli, CnnDataReadsTheSplitsAsCnnTrainDoes) {
  const std::string root = folder_with_test_classes("folder_cli_data", {"class_b"});
  testing::RunResult r = run_program("cnn_data", {"--dataset", "folder:" + root});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find(root + "/train"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("images:  12 of"), std::string::npos) << "3 classes x 4: " << r.output;
  r = run_program("cnn_data", {"--dataset", "folder:" + root, "--split", "test"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find(root + "/test"), std::string::npos) << "--split test is honoured: " << r.output;
  EXPECT_NE(r.output.find("images:  4 of"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("class_a"), std::string::npos) << "the training split's classes: " << r.output;
  std::filesystem::remove_all(root);
}

// Cuts a file to its first `keep` bytes (its header stays: indexing accepts it, decoding does not).
void truncate_file(const std::string& path, std::size_t keep) {
  const std::string bytes = testing::file_bytes(path);
  std::FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(std::fwrite(bytes.data(), 1, std::min(keep, bytes.size()), f), std::min(keep, bytes.size()));
  std::fclose(f);
}

TEST(FolderDatasetCli, BadImageDuringAnEpochStopsKeepingTheCheckpointOrIsSkipped) {
  const std::string root = testing::tiny_folder_dataset("folder_cli_bad", 4);
  const std::string dir = root + "/ck";
  const std::vector<std::string> base = {"--cpu",        "--dataset", "folder:" + root,   "--model", "cnn3",
                                         "--batch-size", "4",         "--checkpoint-dir", dir};
  testing::RunResult r = run_train(testing::with_args(base, {"--epochs", "1"}));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string before = testing::file_bytes(dir + "/epoch1.safetensors");
  const std::string bad = root + "/train/class_b/2.png";
  truncate_file(bad, 60);  // past the PNG header, into the pixel data
  r = run_train(testing::with_args(base, {"--epochs", "2", "--resume", "auto"}));
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find(bad), std::string::npos) << "names the file: " << r.output;
  EXPECT_NE(r.output.find("truncated"), std::string::npos) << "and what is wrong: " << r.output;
  EXPECT_EQ(testing::file_bytes(dir + "/epoch1.safetensors"), before) << "the last checkpoint is intact";
  r = run_train(testing::with_args(base, {"--epochs", "2", "--resume", "auto", "--skip-bad-images"}));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("skipped a bad image (--skip-bad-images): " + bad), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("| Skipped: 1 bad images"), std::string::npos) << r.output;
  std::filesystem::remove_all(root);
}

}  // namespace
}  // namespace engine::apps
