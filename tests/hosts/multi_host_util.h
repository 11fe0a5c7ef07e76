#pragma once
// The multi-host tests' shared run: cnn_train's ranks started on the virtual hosts (tests/hosts/
// virtual_hosts.h) by plain variables, as a launcher on each host would start them, and the one-host run they
// must equal.

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "optim/safetensors.h"
#include "tests/cpu/cnn_train_restart_test_util.h"
#include "tests/cpu/cnn_train_test_util.h"
#include "tests/hosts/virtual_hosts.h"

namespace engine::apps::testing {

inline constexpr int kRanksPerHost = 2;
inline constexpr int kWorld = engine::testing::VirtualHosts::kHosts * kRanksPerHost;

// SKIP_WITHOUT_VIRTUAL_HOSTS() for two hosts, SKIP_WITHOUT_VIRTUAL_HOSTS(3) for three.
#define SKIP_WITHOUT_VIRTUAL_HOSTS(...)                                                 \
  do {                                                                                  \
    const std::string why_ = ::engine::testing::VirtualHosts::unavailable(__VA_ARGS__); \
    if (!why_.empty()) GTEST_SKIP() << why_;                                            \
  } while (0)

// The shared tiny run on the CPU (tests/cpu/cnn_train_test_util.h), lr 0.005 for batches of 4 (as the
// launcher tests do), with the rank processes' threads at one each.
inline std::vector<std::string> host_run_args(const std::string& root, const std::string& dir, int batch,
                                              int epochs) {
  auto args = with_args({"--cpu"}, tiny_folder_args(root, dir, "cnn3", batch, epochs));
  *(std::find(args.begin(), args.end(), "--lr") + 1) = "0.005";
  return args;
}

// Rank r of hosts.count() * per_host on host r / per_host, by torchrun's variables, with `env` added.
inline std::unique_ptr<LiveProcess> start_rank(const engine::testing::VirtualHosts& hosts, int rank, int port,
                                               const std::vector<std::string>& args,
                                               std::vector<std::string> env = {},
                                               int per_host = kRanksPerHost) {
  const int host = rank / per_host;
  env.insert(env.end(), {"OMP_NUM_THREADS=1", "OPENBLAS_NUM_THREADS=1", "RANK=" + std::to_string(rank),
                         "LOCAL_RANK=" + std::to_string(rank % per_host),
                         "WORLD_SIZE=" + std::to_string(hosts.count() * per_host),
                         "MASTER_ADDR=" + engine::testing::VirtualHosts::address(0),
                         "MASTER_PORT=" + std::to_string(port)});
  return std::make_unique<LiveProcess>(
      hosts.on_host(host, env, with_args({program_path("cnn_train")}, args)));
}

inline std::vector<std::unique_ptr<LiveProcess>> start_all_ranks(const engine::testing::VirtualHosts& hosts,
                                                                 int port,
                                                                 const std::vector<std::string>& args,
                                                                 const std::vector<std::string>& env = {},
                                                                 int per_host = kRanksPerHost) {
  std::vector<std::unique_ptr<LiveProcess>> ranks;
  for (int r = 0; r < hosts.count() * per_host; ++r)
    ranks.push_back(start_rank(hosts, r, port, args, env, per_host));
  return ranks;
}

// Every tensor of `a` and `b` equal, bit for bit.
inline void expect_same_tensors(const std::string& a, const std::string& b) {
  const auto diffs = checkpoint_differences(a, b);
  ASSERT_FALSE(diffs.empty()) << a;
  for (const TensorDifference& d : diffs) EXPECT_EQ(d.worst, 0.0) << d.name << ": " << a << " vs " << b;
}

// The reference: our launcher's `world` CPU ranks on one host; returns the final checkpoint's path.
inline std::string one_host_reference(const std::string& root, const std::string& name, int batch, int epochs,
                                      const std::vector<std::string>& extra = {}, int world = kWorld) {
  const std::string dir = temp_dir(name);
  const RunResult r = run_train(with_args(
      with_args(host_run_args(root, dir, batch, epochs), {"--nproc", std::to_string(world)}), extra));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return dir + "/epoch" + std::to_string(epochs) + ".safetensors";
}

inline double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace engine::apps::testing
