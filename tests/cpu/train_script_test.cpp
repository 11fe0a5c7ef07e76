// scripts/train.sh's command line (issue 28, defect 2): a flag given to the script replaces the script's own
// default for it, in either spelling (--flag VALUE, --flag=VALUE); other flags are added. Before, the script
// passed its default and the user's flag both, and cnn_train refused ("--epochs: At Most 1 required but
// received 2"). TRAIN_DRY_RUN=1 prints the cnn_train command instead of building and training.

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/common/environment.h"
#include "tests/cpu/cnn_train_test_util.h"

namespace engine::apps {
namespace {

using testing::count_of;

// The cnn_train command train.sh would run with `args`.
testing::RunResult dry_run(const std::vector<std::string>& args) {
  std::string command = "TRAIN_DRY_RUN=1 bash ";
  command.append(testing::shell_quote(engine::testing::repo_root().string() + "/scripts/train.sh"));
  for (const std::string& a : args) command.append(" ").append(testing::shell_quote(a));
  return testing::run_command(std::move(command));
}

TEST(TrainScript, FlagsGivenToTheScriptReplaceItsDefaults) {
  // --data-dir given: the script does not look for Debian's Fashion-MNIST, so this runs on any machine.
  const testing::RunResult r = dry_run({"--epochs", "3", "--data-dir=/data/fm", "--seed", "7"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(count_of(r.output, "--epochs"), 1u) << r.output;
  EXPECT_NE(r.output.find("--epochs 3"), std::string::npos) << r.output;
  EXPECT_EQ(count_of(r.output, "--data-dir"), 1u) << r.output;
  EXPECT_NE(r.output.find("--data-dir=/data/fm"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("--seed 7"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("--model mnist_cnn"), std::string::npos) << "a default not overridden stays\n"
                                                                   << r.output;
}

TEST(TrainScript, AnotherDatasetDropsFashionMnistsFolderAndModel) {
  const testing::RunResult r = dry_run({"--dataset", "mnist"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(count_of(r.output, "--dataset"), 1u) << r.output;
  EXPECT_EQ(r.output.find("--data-dir"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("--model"), std::string::npos) << r.output;
}

// Issue 44, defect 6: `train.sh --dataset mnist` announced "training mnist_cnn on Fashion-MNIST", then
// trained MNIST. The announcement is made from the command line the script runs.
TEST(TrainScript, TheAnnouncementNamesTheDatasetAndModelTrained) {
  testing::RunResult r = dry_run({"--dataset", "mnist"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("== training cnn_train's default model for mnist on mnist on "), std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("ashion"), std::string::npos) << r.output;
  r = dry_run({"--dataset=cifar10", "--model", "vgg6"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("== training vgg6 on cifar10 on "), std::string::npos) << r.output;
  r = dry_run({"--data-dir=/data/fm"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("== training mnist_cnn on fashion-mnist on "), std::string::npos) << r.output;
}

// Run again, the script trains again (its folder holds the last run's checkpoints, which cnn_train keeps
// unless told): --overwrite, but not when the user continues a run or evaluates one.
TEST(TrainScript, ItReplacesItsLastRunsCheckpointsUnlessResuming) {
  testing::RunResult r = dry_run({"--data-dir=/data/fm"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(count_of(r.output, "--overwrite"), 1u) << r.output;
  r = dry_run({"--data-dir=/data/fm", "--resume", "auto"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(count_of(r.output, "--overwrite"), 0u) << r.output;
}

}  // namespace
}  // namespace engine::apps
