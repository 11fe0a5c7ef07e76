// cnn_train's progress bar (apps/train/progress_bar.h; issue 28): rate, running loss and time left on a
// terminal; nothing in a log, nor under mpirun or srun (whose ranks may write to a pseudo-terminal that ends
// in a log).
#include "apps/train/progress_bar.h"

#include <cmath>
#include <map>
#include <string>

#include <gtest/gtest.h>

namespace engine::apps {
namespace {

std::map<std::string, std::string>& fake_env() {
  static std::map<std::string, std::string> env;
  return env;
}

const char* fake_getenv(const char* name) {
  const auto it = fake_env().find(name);
  return it == fake_env().end() ? nullptr : it->second.c_str();
}

TEST(ProgressBar, DrawnOnATerminalOnly) {
  fake_env() = {{"TERM", "xterm-256color"}};
  EXPECT_TRUE(progress_bar_wanted(true, fake_getenv));
  EXPECT_FALSE(progress_bar_wanted(false, fake_getenv));  // a redirected log or a pipe
  fake_env() = {{"TERM", "dumb"}};
  EXPECT_FALSE(progress_bar_wanted(true, fake_getenv));
  for (const char* launcher : {"OMPI_COMM_WORLD_SIZE", "PMI_RANK", "PMIX_RANK", "SLURM_STEP_ID"}) {
    fake_env() = {{"TERM", "xterm"}, {launcher, "2"}};
    EXPECT_FALSE(progress_bar_wanted(true, fake_getenv)) << launcher;
  }
}

TEST(ProgressBar, ShowsRateLossAndTimeLeft) {
  // 22 of 100 steps of 64 images in 11 s: 128 img/s, 39 s left.
  const std::string line = progress_line(22, 100, 0, 11.0, 22 * 64, 1.23456);
  EXPECT_NE(line.find("] 22/100 | 128 img/s | loss 1.2346 | 0:39 left"), std::string::npos) << line;
  EXPECT_EQ(line.find("  [========>"), 0u) << line;
}

TEST(ProgressBar, LeavesOutWhatItDoesNotKnow) {
  // On a GPU the loss stays on the device: no loss; before the first step: no rate and no estimate.
  const std::string gpu = progress_line(50, 100, 0, 2.0, 50 * 1000, std::nan(""));
  EXPECT_NE(gpu.find("] 50/100 | 25,000 img/s | 0:02 left"), std::string::npos) << gpu;
  EXPECT_EQ(gpu.find("loss"), std::string::npos) << gpu;
  const std::string start = progress_line(0, 100, 0, 0.0, 0, std::nan(""));
  EXPECT_EQ(start.substr(start.find(']')), "] 0/100");
  // A resumed epoch (from step 40) estimates from the steps this run did; hours past 59 minutes.
  const std::string resumed = progress_line(41, 10000, 40, 1.0, 64, 2.0);
  EXPECT_NE(resumed.find("| 64 img/s | loss 2.0000 | 2:45:59 left"), std::string::npos) << resumed;
}

TEST(ProgressBar, WritesNothingToANonTerminal) {
  // The test's stdout is captured (a file, not a terminal): the bar stays silent.
  ::testing::internal::CaptureStdout();
  ProgressBar bar(10, 0, true);
  for (int i = 1; i <= 10; ++i) {
    bar.add_loss(1.0f);
    bar.update(i, i * 8);
  }
  bar.clear();
  EXPECT_EQ(::testing::internal::GetCapturedStdout(), "");
}

}  // namespace
}  // namespace engine::apps
