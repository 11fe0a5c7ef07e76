// benchmarks/time_to_accuracy.sh on the tiny image-folder dataset (tests/cpu/cnn_train_test_util.h): a low
// target is reached by every seed, with a crossing time no later than the run and the summary's mean equal to
// the mean of the rows; an unreachable target is reported as not reached; bad arguments are refused.

#include <cstdio>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/common/environment.h"
#include "tests/cpu/cnn_train_test_util.h"

namespace engine::apps {
namespace {

using testing::shell_quote;

using ScriptRun = testing::RunResult;

// bash benchmarks/time_to_accuracy.sh ARGS, with this build's cnn_train (<build>/apps/cnn_train).
ScriptRun run_script(const std::vector<std::string>& args) {
  const std::string build =
      std::filesystem::path(testing::program_path("cnn_train")).parent_path().parent_path().string();
  // Appended piece by piece: "literal" + std::string trips gcc 12's -Wrestrict false positive.
  std::string command = "bash ";
  command.append(shell_quote(engine::testing::repo_root().string() + "/benchmarks/time_to_accuracy.sh"));
  command.append(" --build ").append(shell_quote(build));
  for (const std::string& a : args) command.append(" ").append(shell_quote(a));
  return testing::run_command(std::move(command));
}

std::vector<std::string> train_flags(const std::string& root) {
  return {"--", "--cpu",        "--dataset", "folder:" + root, "--model", "cnn3",           "--epochs",
          "2",  "--batch-size", "8",         "--lr",           "0.05",    "--deterministic"};
}

TEST(TimeToAccuracyScript, ReportsEverySeedTheCrossingAndTheSpread) {
  const std::string root = testing::tiny_folder_dataset("tta_script");
  std::vector<std::string> args = {"--seeds", "3",     "--target",
                                   "1",       "--out", testing::temp_dir("tta_script_out")};
  for (const std::string& f : train_flags(root)) args.push_back(f);
  const ScriptRun r = run_script(args);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // Line by line with sscanf (no std::regex: GCC 12's <regex> trips -Wmaybe-uninitialized in the sanitizer
  // build). Rows: "seed N | final A% | 1% reached at epoch E: T s (training alone U s)".
  double sum = 0.0, printed_mean = -1.0;
  int rows = 0;
  std::istringstream lines(r.output);
  for (std::string line; std::getline(lines, line);) {
    int seed = -1, epoch = -1;
    double final_acc = 0, to_target = 0, training = 0, mean = 0, std_dev = 0;
    if (std::sscanf(line.c_str(),
                    "seed %d | final %lf%% | 1%% reached at epoch %d: %lf s (training alone %lf s)", &seed,
                    &final_acc, &epoch, &to_target, &training) == 5) {
      EXPECT_EQ(seed, rows) << "seeds in order";
      EXPECT_EQ(epoch, 1) << "a 1% target is crossed by the first evaluation";
      EXPECT_LE(training, to_target) << "training alone is part of the time to the crossing";
      EXPECT_GT(to_target, 0.0);
      sum += final_acc;
      ++rows;
    } else if (std::sscanf(line.c_str(), "final accuracy: mean %lf%% | std %lf", &mean, &std_dev) == 2 &&
               line.find("| 3 of 3 seed") != std::string::npos) {
      printed_mean = mean;
    }
  }
  EXPECT_EQ(rows, 3) << r.output;
  ASSERT_GE(printed_mean, 0.0) << "no summary line:\n" << r.output;
  // Rows and mean are printed with 2 decimals: the mean of the rounded rows is within 0.01 of the printed
  // one.
  EXPECT_NEAR(printed_mean, sum / 3.0, 0.01) << r.output;
  EXPECT_NE(r.output.find("time to 1%: mean "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("| 3 of 3 seed(s)\ntraining alone to 1%"), std::string::npos) << r.output;
}

TEST(TimeToAccuracyScript, AnUnreachedTargetIsSaidSo) {
  const std::string root = testing::tiny_folder_dataset("tta_script_high");
  std::vector<std::string> args = {"--seeds", "1", "--target", "100.5"};
  for (const std::string& f : train_flags(root)) args.push_back(f);
  const ScriptRun r = run_script(args);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("seed 0 | final "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("| 100.5% not reached"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("time to 100.5%: none of 1 seed(s)"), std::string::npos) << r.output;
}

TEST(TimeToAccuracyScript, RefusesBadArguments) {
  ScriptRun r = run_script({"--seeds", "0"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--seeds '0': expected a positive integer"), std::string::npos) << r.output;
  r = run_script({"--", "--dataset", "folder:/x", "--seed", "3"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("do not pass --seed"), std::string::npos) << r.output;
  // A failing cnn_train run stops the script with its log's end.
  r = run_script({"--seeds", "1", "--", "--cpu", "--dataset", "folder:/nonexistent/tta"});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("seed 0: cnn_train failed"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace engine::apps
