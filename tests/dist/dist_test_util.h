#pragma once
// Helpers of the multi-process DDP tests: a scratch directory, the worker started through the launcher or
// with torchrun-style variables set by the test itself, and the workers' result files.

#include <chrono>
#include <cstring>
#include <fstream>
#include <spawn.h>
#include <stdlib.h>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include <gtest/gtest.h>

#include "dist/launcher.h"
#include "dist/tcp_store.h"

extern char** environ;

namespace engine::dist::testing {

inline std::string scratch_dir() {
  std::string templ = ::testing::TempDir() + "dist_test_XXXXXX";
  const char* d = ::mkdtemp(templ.data());
  EXPECT_NE(d, nullptr);
  return templ;
}

inline std::vector<std::string> worker_argv(const std::string& mode, const std::vector<std::string>& args) {
  std::vector<std::string> argv{DIST_TEST_WORKER, mode};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

// Through dist::launch_workers.
inline LaunchResult launch(int world, const std::string& mode, const std::vector<std::string>& args) {
  LaunchOptions o;
  o.nproc = world;
  o.executable = DIST_TEST_WORKER;
  o.grace = std::chrono::milliseconds(2000);
  return launch_workers(worker_argv(mode, args), o);
}

struct SpawnResult {
  std::vector<int> statuses;  // wait statuses, rank order
  double seconds = 0;         // until the last process ended
  bool timed_out = false;     // some process was still running at the limit (then killed)
};

// Like torchrun: sets RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT itself and starts the ranks;
// waits up to `limit` for all of them.
inline SpawnResult spawn_torchrun_style(int world, const std::string& mode,
                                        const std::vector<std::string>& args,
                                        std::chrono::seconds limit = std::chrono::seconds(60),
                                        const std::string& master_addr = "127.0.0.1") {
  const int port = find_free_port();
  const std::vector<std::string> argv_s = worker_argv(mode, args);
  std::vector<char*> argv;
  for (const std::string& a : argv_s) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<pid_t> pids;
  const auto start = std::chrono::steady_clock::now();
  for (int r = 0; r < world; ++r) {
    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string s(*e);
      if (s.rfind("RANK=", 0) != 0 && s.rfind("WORLD_SIZE=", 0) != 0 && s.rfind("ENGINE_LAUNCHER=", 0) != 0)
        env.push_back(s);
    }
    env.push_back("RANK=" + std::to_string(r));
    env.push_back("WORLD_SIZE=" + std::to_string(world));
    env.push_back("LOCAL_RANK=" + std::to_string(r));
    env.push_back("MASTER_ADDR=" + master_addr);
    env.push_back("MASTER_PORT=" + std::to_string(port));
    std::vector<char*> envp;
    for (const std::string& e : env) envp.push_back(const_cast<char*>(e.c_str()));
    envp.push_back(nullptr);
    pid_t pid = -1;
    EXPECT_EQ(::posix_spawn(&pid, DIST_TEST_WORKER, nullptr, nullptr, argv.data(), envp.data()), 0);
    pids.push_back(pid);
  }
  SpawnResult result;
  result.statuses.assign(pids.size(), 0);
  std::vector<bool> done(pids.size(), false);
  std::size_t left = pids.size();
  while (left > 0) {
    for (std::size_t i = 0; i < pids.size(); ++i) {
      if (done[i]) continue;
      if (::waitpid(pids[i], &result.statuses[i], WNOHANG) == pids[i]) {
        done[i] = true;
        --left;
      }
    }
    if (std::chrono::steady_clock::now() - start > limit) {
      result.timed_out = true;
      for (std::size_t i = 0; i < pids.size(); ++i) {
        if (!done[i]) {
          ::kill(pids[i], SIGKILL);
          ::waitpid(pids[i], &result.statuses[i], 0);
        }
      }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

inline std::vector<double> read_doubles(const std::string& path) {
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  EXPECT_TRUE(f.good()) << "missing " << path;
  const auto bytes = static_cast<std::size_t>(f.tellg());
  std::vector<double> v(bytes / sizeof(double));
  f.seekg(0);
  f.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(bytes));
  return v;
}

// A worker's result file split up.
struct RankResult {
  double allreduce_count = 0;
  std::vector<double> grads, params;
};

inline RankResult read_rank(const std::string& dir, int rank) {
  const std::vector<double> v = read_doubles(dir + "/rank" + std::to_string(rank) + ".bin");
  RankResult r;
  if (v.size() < 2) return r;
  r.allreduce_count = v[0];
  const auto n = static_cast<std::size_t>(v[1]);
  r.grads.assign(v.begin() + 2, v.begin() + 2 + static_cast<std::ptrdiff_t>(n));
  r.params.assign(v.begin() + 2 + static_cast<std::ptrdiff_t>(n), v.end());
  return r;
}

// Every element within `rel` of the reference, relative to the larger magnitude, with an absolute floor of
// 1e-10 x the largest reference magnitude: gradients that are zero in exact arithmetic (a convolution bias
// followed by BatchNorm) come out as ~1e-16 rounding noise of either sign, which no relative test can match.
inline void expect_close(const std::vector<double>& got, const std::vector<double>& want, double rel,
                         const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double largest = 0.0;
  for (double w : want) largest = std::max(largest, std::abs(w));
  int reported = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double scale = std::max(std::abs(got[i]), std::abs(want[i]));
    if (std::abs(got[i] - want[i]) > rel * scale + 1e-10 * largest && reported++ < 5) {
      ADD_FAILURE() << what << ": element " << i << " is " << got[i] << ", single process " << want[i];
    }
  }
}

}  // namespace engine::dist::testing
