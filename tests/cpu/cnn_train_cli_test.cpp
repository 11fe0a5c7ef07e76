// cnn_train's answers to bad command lines (../shared/BAD_INPUTS.md, "Command line"): exit code 2 and a
// message naming the flag, value or file, within seconds. Runs the real program
// (tests/cpu/cnn_train_test_util.h).

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/cpu/cnn_train_test_util.h"

namespace engine::apps {
namespace {

using testing::run_train;

// Runs cnn_train with `args` (plus a valid --dataset unless given) and expects exit 2 naming `needle`.
void expect_bad_usage(const std::vector<std::string>& args, const std::string& needle) {
  const testing::RunResult r = run_train(args);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(needle), std::string::npos) << "expected '" << needle << "' in:\n" << r.output;
}

TEST(CnnTrainCli, HelpListsEveryFlag) {
  const testing::RunResult r = run_train({"--help"});
  EXPECT_EQ(r.exit_code, 0);
  for (const char* flag : {"--dataset",
                           "--data-dir",
                           "--download",
                           "--model",
                           "--epochs",
                           "--batch-size",
                           "--lr",
                           "--momentum",
                           "--weight-decay",
                           "--nesterov",
                           "--schedule",
                           "--step-epochs",
                           "--gamma",
                           "--warmup-epochs",
                           "--label-smoothing",
                           "--augment",
                           "--seed",
                           "--cpu",
                           "--limit-train",
                           "--limit-test",
                           "--save-every",
                           "--checkpoint-dir",
                           "--resume",
                           "--eval-only",
                           "--metrics",
                           "--plot",
                           "--deterministic",
                           "--layout"}) {
    EXPECT_NE(r.output.find(flag), std::string::npos) << flag << " missing from --help";
  }
}

TEST(CnnTrainCli, UnknownLayout) {
  expect_bad_usage({"--dataset", "mnist", "--layout", "nchwc"}, "--layout");
  expect_bad_usage({"--dataset", "mnist", "--layout", "NHWC"},
                   "'NHWC' is not one of auto, nchw, nhwc, nchw16c or nchw8c");
}

TEST(CnnTrainCli, UnknownFlag) {
  expect_bad_usage({"--dataset", "mnist", "--learning-rate", "0.1"}, "--learning-rate");
}

TEST(CnnTrainCli, MistypedFlagNamesTheNearest) {
  expect_bad_usage({"--dataset", "mnist", "--epoch", "1"}, "unknown flag --epoch; did you mean --epochs?");
  expect_bad_usage({"--epoch", "1"}, "did you mean --epochs?");  // before the missing --dataset
}

TEST(CnnTrainCli, MissingValue) { expect_bad_usage({"--dataset", "mnist", "--lr"}, "--lr"); }

TEST(CnnTrainCli, LrThatDoesNotParse) { expect_bad_usage({"--dataset", "mnist", "--lr", "abc"}, "--lr"); }

// What was wrong with the number, readably (CLI11's own check said "Value abc not in range 0.000000 to" and
// 300 digits of 1e300, and let NaN through).
TEST(CnnTrainCli, ANumberThatDoesNotParseOrLiesOutsideItsRangeIsSaidSo) {
  const std::vector<std::vector<std::string>> cases = {
      {"--lr", "abc", "--lr: 'abc' is not a number"},
      {"--lr", "nan", "--lr: 'nan' is not a number"},
      {"--momentum", "inf", "--momentum: inf is outside [0, 1e+300]"},
      {"--epochs", "1.5", "--epochs: '1.5' is not an integer"},
      {"--epochs", "-1", "--epochs: -1 is outside [1, 1000000]"},
      {"--timeout", "0", "--timeout: 0 is outside [0.1, 1e+07]"},
      {"--seed", "-1", "--seed: '-1' is not a non-negative integer"},  // was read as 2^64 - 1
  };
  for (const std::vector<std::string>& c : cases) {
    const testing::RunResult r = run_train({"--dataset", "mnist", c[0], c[1]});
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find(c[2]), std::string::npos) << "expected '" << c[2] << "' in:\n" << r.output;
    EXPECT_LT(r.output.size(), 200u) << r.output;
  }
}

// An empty list would read as no --gpus at all and train on the CPU.
TEST(CnnTrainCli, EmptyGpusIsRefused) {
  expect_bad_usage({"--dataset", "mnist", "--gpus", ""}, "--gpus: is empty: list GPU ids");
}

TEST(CnnTrainCli, NegativeEpochs) { expect_bad_usage({"--dataset", "mnist", "--epochs", "-1"}, "--epochs"); }

TEST(CnnTrainCli, ZeroBatchSize) {
  expect_bad_usage({"--dataset", "mnist", "--batch-size", "0"}, "--batch-size");
}

TEST(CnnTrainCli, UnknownDataset) { expect_bad_usage({"--dataset", "imagenet"}, "imagenet"); }

TEST(CnnTrainCli, MissingDatasetFlag) { expect_bad_usage({"--epochs", "1"}, "--dataset"); }

TEST(CnnTrainCli, UnknownModel) { expect_bad_usage({"--dataset", "mnist", "--model", "vgg19"}, "vgg19"); }

TEST(CnnTrainCli, UnknownSchedule) {
  expect_bad_usage({"--dataset", "mnist", "--schedule", "linear"}, "--schedule");
}

TEST(CnnTrainCli, StepScheduleWithoutEpochs) {
  expect_bad_usage({"--dataset", "mnist", "--schedule", "step"}, "--step-epochs");
}

TEST(CnnTrainCli, MissingDataFolder) {
  expect_bad_usage({"--cpu", "--dataset", "mnist", "--data-dir", "/nonexistent/mnist"}, "/nonexistent/mnist");
}

TEST(CnnTrainCli, BatchSizeLargerThanTheDataset) {
  const std::string root = testing::tiny_folder_dataset("cli_batch");
  expect_bad_usage({"--cpu", "--dataset", "folder:" + root, "--model", "cnn3", "--batch-size", "500"},
                   "--batch-size 500");
}

TEST(CnnTrainCli, LimitLargerThanTheDataset) {
  const std::string root = testing::tiny_folder_dataset("cli_limit");
  expect_bad_usage({"--cpu", "--dataset", "folder:" + root, "--model", "cnn3", "--limit-train", "1000"},
                   "--limit-train");
}

TEST(CnnTrainCli, MissingCheckpointOnResume) {
  const std::string root = testing::tiny_folder_dataset("cli_resume");
  expect_bad_usage({"--cpu", "--dataset", "folder:" + root, "--batch-size", "8", "--resume",
                    "/nonexistent/last.safetensors"},
                   "/nonexistent/last.safetensors");
}

TEST(CnnTrainCli, MissingCheckpointOnEvalOnly) {
  const std::string root = testing::tiny_folder_dataset("cli_eval");
  expect_bad_usage({"--cpu", "--dataset", "folder:" + root, "--batch-size", "8", "--eval-only",
                    "/nonexistent/x.safetensors"},
                   "/nonexistent/x.safetensors");
}

}  // namespace
}  // namespace engine::apps
