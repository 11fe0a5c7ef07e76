// The launcher names a rank the kernel's out-of-memory killer ended (label cpu): a memory cgroup limit, as a
// Slurm job's or a container's, makes the kernel SIGKILL the largest process instead of failing an
// allocation, which read as a plain "killed by signal 9" before (scripts/faults.sh's memory-cgroup kind).
// Needs root and a memory cgroup that allows a child group (cgroup v1's memory hierarchy, or v2 with memory
// in the parent's cgroup.subtree_control); skips saying which is missing.

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

#include <gtest/gtest.h>

#include "dist/launcher.h"

namespace engine::dist {
namespace {

// A child memory cgroup of this process's own, limited to `limit_bytes`, or "" and the reason in `why`.
std::string make_capped_group(std::size_t limit_bytes, std::string& why) {
  std::ifstream in("/proc/self/cgroup");
  std::string line, v1, v2;
  while (std::getline(in, line)) {
    const std::size_t a = line.find(':'), b = line.find(':', a + 1);
    const std::string controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    if (controllers == "memory") v1 = "/sys/fs/cgroup/memory" + path;
    if (controllers.empty()) v2 = "/sys/fs/cgroup" + path;
  }
  std::string parent, limit_file;
  if (!v1.empty() && std::filesystem::exists(v1 + "/memory.limit_in_bytes")) {
    parent = v1, limit_file = "memory.limit_in_bytes";
  } else {
    std::ifstream subtree(v2 + "/cgroup.subtree_control");
    std::string word;
    while (subtree >> word) {
      if (word == "memory") parent = v2, limit_file = "memory.max";
    }
    if (parent.empty()) {
      why = "no memory controller for a child group (" + v2 + "/cgroup.subtree_control lacks memory)";
      return "";
    }
  }
  std::string group = parent + "/launcher_oom_test_" + std::to_string(::getpid());
  std::error_code ec;
  if (!std::filesystem::create_directory(group, ec)) {
    why = "cannot create " + group + ": " + ec.message() + " (root needed)";
    return "";
  }
  std::ofstream(group + "/" + limit_file) << limit_bytes;
  return group;
}

// 2 workers (/bin/sh): rank 1 joins `group` and runs `rank1`, rank 0 waits to be stopped.
LaunchResult launch_two(const std::string& group, const std::string& rank1) {
  LaunchOptions options;
  options.nproc = 2;
  options.executable = "/bin/sh";
  options.settle = std::chrono::milliseconds(200);
  options.grace = std::chrono::milliseconds(500);
  const std::string script = "if [ \"$RANK\" = 1 ]; then echo $$ > " + group + "/cgroup.procs && " + rank1 +
                             "; else exec sleep 60; fi";
  return launch_workers({"sh", "-c", script}, options);
}

class LauncherOomKill : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    group_ = make_capped_group(std::size_t{64} << 20, why);
    if (group_.empty()) GTEST_SKIP() << "no memory cgroup to cap: " << why;
  }
  void TearDown() override {
    if (!group_.empty()) ::rmdir(group_.c_str());
  }
  std::string group_;
};

// One test, not two: the launcher reads the OOM counts of every memory cgroup below its own (a rank may move
// into any of them), so an OOM kill in a sibling test's group, run in parallel by ctest, would be counted
// for a kill -9 here (seen in CI). In sequence, the second launch's counts are taken after the first's kill.
TEST_F(LauncherOomKill, ARankTheKernelKilledForMemoryIsNamedAsSuchAndAKillMinusNineIsNot) {
  {
    SCOPED_TRACE("the OOM killer");
    // dd's 256 MiB buffer, filled, is past the group's 64 MiB: the kernel kills dd.
    const LaunchResult r = launch_two(group_, "exec dd if=/dev/zero of=/dev/null bs=256M count=1");
    EXPECT_EQ(r.failed_rank, 1) << r.message;
    EXPECT_EQ(r.exit_code, 128 + 9) << r.message;
    EXPECT_NE(r.message.find("rank 1 (pid "), std::string::npos) << r.message;
    EXPECT_NE(r.message.find("was killed by signal 9"), std::string::npos) << r.message;
    EXPECT_NE(r.message.find(": the kernel's out-of-memory killer (memory cgroup " + group_ + ": "),
              std::string::npos)
        << r.message;
    EXPECT_NE(r.message.find(" 67108864, oom_kill count 0 -> 1)"), std::string::npos) << r.message;
  }
  {
    SCOPED_TRACE("kill -9");
    const LaunchResult r = launch_two(group_, "kill -9 $$");
    EXPECT_EQ(r.failed_rank, 1) << r.message;
    EXPECT_NE(r.message.find("was killed by signal 9"), std::string::npos) << r.message;
    EXPECT_EQ(r.message.find("out-of-memory"), std::string::npos) << r.message;
  }
}

// Needs neither root nor a cgroup: the workers start with the launcher's oom_score_adj plus 500 (at most
// 1000), so under a memory limit the kernel's OOM killer picks a rank, which the launcher names, and not the
// launcher (seen in scripts/faults.sh's memory-cgroup kind: a launcher killed that way said nothing).
TEST(LauncherOomScore, WorkersAreTheOomKillersFirstChoiceNotTheLauncher) {
  int own = 0;
  std::ifstream("/proc/self/oom_score_adj") >> own;
  const std::string dir = ::testing::TempDir() + "oom_score_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  LaunchOptions options;
  options.nproc = 2;
  options.executable = "/bin/sh";
  const LaunchResult r =
      launch_workers({"sh", "-c", "cat /proc/self/oom_score_adj > " + dir + "/$RANK"}, options);
  ASSERT_EQ(r.exit_code, 0) << r.message;
  for (const char* rank : {"0", "1"}) {
    int worker = -2000;
    std::ifstream(dir + "/" + rank) >> worker;
    EXPECT_EQ(worker, std::min(own + 500, 1000)) << "rank " << rank << ", the launcher's own " << own;
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace engine::dist
