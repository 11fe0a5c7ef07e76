// --plot on resumed runs (issue 28, defect 1): the curves hold every epoch (the earlier ones come back from
// the checkpoint's "history" metadata), one epoch is a drawable point, and a plot that fails warns but never
// ends the run nor replaces the previous image with a blank one.

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "apps/train/epoch_log.h"
#include "apps/train/training_plot.h"
#include "optim/safetensors.h"
#include "tests/common/environment.h"
#include "tests/cpu/cnn_train_test_util.h"

namespace engine::apps {
namespace {

using testing::file_bytes;
using testing::run_train;

EpochMetrics epoch_metrics(std::int64_t epoch) {
  EpochMetrics m;
  m.epoch = epoch;
  m.train_loss = 1.0 / static_cast<double>(epoch);
  m.test_loss = 1.2 / static_cast<double>(epoch);
  m.train_acc = 50.0 + static_cast<double>(epoch);
  m.test_acc = 45.0 + static_cast<double>(epoch);
  m.precision = "fp32";
  return m;
}

// A folder holding a `gnuplot` that fails as the real one did on a resumed run's single point.
std::string failing_gnuplot_dir(const std::string& name) {
  std::string dir = testing::temp_dir(name);  // not const: moved out
  const std::string path = dir + "/gnuplot";
  std::ofstream(path) << "#!/bin/sh\necho 'all points y value undefined!' >&2\nexit 1\n";
  std::filesystem::permissions(path, std::filesystem::perms::owner_all);
  return dir;
}

// Sets PATH for the scope, then restores it.
class ScopedPath {
 public:
  explicit ScopedPath(const std::string& first) : old_(std::getenv("PATH") ? std::getenv("PATH") : "") {
    ::setenv("PATH", (first + ":" + old_).c_str(), 1);
  }
  ~ScopedPath() { ::setenv("PATH", old_.c_str(), 1); }
  ScopedPath(const ScopedPath&) = delete;
  ScopedPath& operator=(const ScopedPath&) = delete;

 private:
  std::string old_;
};

TEST(TrainingPlot, OneEpochAfterTheFirstIsDrawn) {
  SKIP_WITHOUT_TOOL("gnuplot");
  const std::string png = testing::temp_dir("plot_one_point") + "/curves.png";
  // Epoch 4 alone: the range used to be [0.5, 1.5] whatever the epoch, and gnuplot refused.
  EXPECT_NO_THROW(write_training_plot({epoch_metrics(4)}, png, "one point"));
  EXPECT_EQ(file_bytes(png).substr(1, 3), "PNG");
}

TEST(TrainingPlot, AFailedDrawingKeepsThePreviousImageAndOnlyWarns) {
  const std::string png = testing::temp_dir("plot_keep") + "/curves.png";
  std::ofstream(png) << "the previous image";
  const ScopedPath path(failing_gnuplot_dir("plot_keep_bin"));
  const std::vector<EpochMetrics> history = {epoch_metrics(1), epoch_metrics(2)};
  EXPECT_THROW(write_training_plot(history, png, "fails"), Error);
  EXPECT_FALSE(plot_or_warn(history, png, "fails"));
  EXPECT_EQ(file_bytes(png), "the previous image");
  for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::path(png).parent_path()))
    EXPECT_EQ(entry.path().filename(), "curves.png") << "a temporary file was left behind";
}

TEST(EpochLog, HistoryKeepsTheCurvesThroughJson) {
  std::vector<EpochMetrics> history = {epoch_metrics(1), epoch_metrics(2)};
  history[1].lr = 0.1 / 3.0;
  history[1].test_loss = std::nan("");
  history[1].seconds = 1.5;
  const std::vector<EpochMetrics> back = parse_history_json(format_history_json(history));
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[1].epoch, 2);
  EXPECT_EQ(back[1].lr, 0.1 / 3.0);
  EXPECT_EQ(back[0].train_loss, history[0].train_loss);
  EXPECT_EQ(back[1].test_acc, history[1].test_acc);
  EXPECT_TRUE(std::isnan(back[1].test_loss));
  EXPECT_EQ(back[1].seconds, 0.0) << "timings are left out: a resumed run's checkpoints stay bit for bit";
  EXPECT_THROW(parse_history_json("{\"epoch\": 1}"), Error);
  EXPECT_THROW(parse_history_json("[{\"epoch\": 1}]"), Error);
}

std::vector<std::int64_t> history_epochs(const std::string& checkpoint) {
  const optim::SafetensorsFile file = optim::SafetensorsFile::read(checkpoint);
  const auto it = file.metadata().find("history");
  std::vector<std::int64_t> epochs;
  if (it == file.metadata().end()) return epochs;
  for (const EpochMetrics& m : parse_history_json(it->second)) epochs.push_back(m.epoch);
  return epochs;
}

// The run: 1 epoch, then --resume auto to 2 and 3 epochs with --plot. Before the fix the resumed
// run's history held its own epoch alone, gnuplot refused the single point and the run ended with exit 1.
TEST(CnnTrainPlot, AResumedRunPlotsEveryEpochAndAFailedPlotOnlyWarns) {
  SKIP_WITHOUT_TOOL("gnuplot");
  const std::string root = testing::tiny_folder_dataset("plot_resume");
  const std::string dir = testing::temp_dir("plot_resume_out");
  const std::string png = dir + "/curves.png";
  auto run = [&](int epochs) {
    return testing::with_args(testing::tiny_folder_args(root, dir, "cnn3", 8, epochs),
                              {"--cpu", "--resume", "auto", "--plot", png});
  };
  ASSERT_EQ(run_train(run(1)).exit_code, 0);
  const testing::RunResult resumed = run_train(run(2));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_EQ(resumed.output.find("warning"), std::string::npos) << resumed.output;
  EXPECT_EQ(file_bytes(png).substr(1, 3), "PNG");
  EXPECT_EQ(history_epochs(dir + "/epoch2.safetensors"), (std::vector<std::int64_t>{1, 2}));

  const std::string drawn = file_bytes(png);
  std::string command =
      "PATH=" + testing::shell_quote(failing_gnuplot_dir("plot_resume_bin")) + ":\"$PATH\" ";
  command.append(testing::shell_quote(testing::program_path("cnn_train")));
  for (const std::string& a : run(3)) command.append(" ").append(testing::shell_quote(a));
  const testing::RunResult failing = testing::run_command(command);
  ASSERT_EQ(failing.exit_code, 0) << failing.output;
  EXPECT_NE(failing.output.find("cnn_train: warning: "), std::string::npos) << failing.output;
  EXPECT_NE(failing.output.find("--plot " + png + ": gnuplot exited with status 1"), std::string::npos)
      << failing.output;
  EXPECT_NE(failing.output.find("Epoch 3 |"), std::string::npos) << failing.output;
  EXPECT_TRUE(file_bytes(png) == drawn) << "the previous image was replaced";
  EXPECT_EQ(history_epochs(dir + "/epoch3.safetensors"), (std::vector<std::int64_t>{1, 2, 3}));
}

}  // namespace
}  // namespace engine::apps
