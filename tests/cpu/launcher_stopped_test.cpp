// A rank stopped (SIGSTOP, a debugger) after every other rank has finished waits on nobody and nobody waits
// on it, so no peer's timeout names it: the launcher waited for ever (scripts/faults.sh's rank-stop found it,
// 3 of 20 trials: a rank stopped after the last collective of the run). Now, stopped that long past the
// others (LaunchOptions::stopped_limit, cnn_train's --timeout), it is ended and named. Workers are /bin/sh.

#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "dist/launcher.h"

namespace engine::dist {
namespace {

TEST(LauncherStopped, ARankStoppedAfterTheOthersFinishedIsEndedAndNamed) {
  LaunchOptions options;
  options.nproc = 2;
  options.executable = "/bin/sh";
  options.stopped_limit = std::chrono::milliseconds(500);
  // Rank 0 stops itself; rank 1 ends at once, status 0.
  const std::string script = "if [ \"$RANK\" = 0 ]; then kill -STOP $$; fi; exit 0";
  // On a thread, so a launcher that never returns fails this test instead of hanging it (the thread is then
  // left behind; the process ends with the test program).
  auto done = std::make_shared<std::promise<LaunchResult>>();
  std::future<LaunchResult> result = done->get_future();
  std::thread([done, script, options] {
    done->set_value(launch_workers({"sh", "-c", script}, options));
  }).detach();
  ASSERT_EQ(result.wait_for(std::chrono::seconds(30)), std::future_status::ready)
      << "the launcher still waits 30 s after its only running rank stopped";
  const LaunchResult r = result.get();
  EXPECT_EQ(r.failed_rank, 0) << r.message;
  EXPECT_EQ(r.exit_code, 128 + 9) << r.message;
  EXPECT_NE(r.message.find("rank 0 (pid "), std::string::npos) << r.message;
  EXPECT_NE(
      r.message.find("was stopped (SIGSTOP or a debugger) for 0.5 s after every other rank had finished"),
      std::string::npos)
      << r.message;
}

// Both ranks finishing normally is not touched by the rule (nothing stopped).
TEST(LauncherStopped, RanksThatFinishAreNotTakenForStopped) {
  LaunchOptions options;
  options.nproc = 2;
  options.executable = "/bin/sh";
  options.stopped_limit = std::chrono::milliseconds(1);
  const LaunchResult r =
      launch_workers({"sh", "-c", "if [ \"$RANK\" = 0 ]; then sleep 1; fi; exit 0"}, options);
  EXPECT_EQ(r.exit_code, 0) << r.message;
  EXPECT_EQ(r.failed_rank, -1) << r.message;
}

}  // namespace
}  // namespace engine::dist
