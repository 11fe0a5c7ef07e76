// Elastic across hosts: torchrun --nnodes=1:2 --max-restarts=1 on each of two hosts (tests/hosts/
// virtual_hosts.h), two CPU ranks each, --resume auto --save-every-steps 10; host 1 is lost mid-epoch (its
// torchrun and ranks killed, its link down). Host 0's torchrun restarts its workers in a world of 2, which
// resume from the newest mid-epoch checkpoint and finish; the log says which checkpoint, which sampler
// position and how many ranks. From what the log says, the samplers of the two worlds (the engine's own,
// as the ranks build them) are checked to cover the interrupted epoch exactly: every sample the old world of
// 4 trained before that position and every one the new world of 2 trains after it, none twice, none lost.
// Skipped where torchrun is not installed.

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <regex>
#include <signal.h>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include "data/distributed_sampler.h"
#include "dist/tcp_store.h"
#include "tests/common/pytorch_tools.h"
#include "tests/hosts/multi_host_util.h"

namespace engine::apps {
namespace {

using engine::testing::VirtualHosts;
using testing::with_args;

TEST(HostsElastic, TorchrunContinuesOnTheRemainingHostFromTheNewestCheckpoint) {
  SKIP_WITHOUT_VIRTUAL_HOSTS();
  SKIP_WITHOUT_PYTHON_MODULES("torch", "torch.distributed.run");
  const engine::testing::PyTorchTools& torch = engine::testing::pytorch_tools();
  if (torch.torchrun.empty()) GTEST_SKIP() << engine::testing::kHowToEnablePyTorch;
  const std::string root = testing::tiny_folder_dataset("hosts_elastic_data", 400);
  VirtualHosts hosts;
  const std::string dir = testing::temp_dir("hosts_elastic");
  const std::string endpoint = VirtualHosts::address(0) + ":" + std::to_string(dist::find_free_port());
  std::vector<std::unique_ptr<testing::LiveProcess>> nodes;
  for (int h = 0; h < VirtualHosts::kHosts; ++h) {
    nodes.push_back(std::make_unique<testing::LiveProcess>(hosts.on_host(
        h, {"OMP_NUM_THREADS=1"},
        with_args({torch.torchrun, "--nnodes=1:2", "--nproc_per_node=2", "--max-restarts=1",
                   "--rdzv-backend=c10d", "--rdzv-id=elastic", "--rdzv-endpoint=" + endpoint, "--no-python",
                   testing::program_path("cnn_train")},
                  with_args(testing::host_run_args(root, dir, 4, 2),
                            {"--resume", "auto", "--save-every-steps", "10", "--timeout", "10"})))));
  }
  // Rank 0 (which saves) may be on either host: c10d's rendezvous orders the nodes as they join.
  const std::string step20 = dir + "/step20.safetensors";
  const auto start = std::chrono::steady_clock::now();
  while (!std::filesystem::exists(step20) && testing::seconds_since(start) < 300)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_TRUE(std::filesystem::exists(step20)) << nodes[0]->output() << "\n" << nodes[1]->output();
  ::kill(-nodes[1]->pid(), SIGKILL);  // host 1's torchrun and its workers (its own process group)
  hosts.set_link(1, false);
  ASSERT_EQ(nodes[0]->finish(300), 0) << "torch " << torch.version << "\n" << nodes[0]->output();
  const std::string& log = nodes[0]->output();
  std::smatch resumed;
  ASSERT_TRUE(
      std::regex_search(log, resumed,
                        std::regex("cnn_train: resumed from " + dir +
                                   "/step([0-9]+)\\.safetensors: epoch ([0-9]+) from sampler position "
                                   "([0-9]+) \\(([0-9]+) samples of it done\\), optimizer step [0-9]+, "
                                   "on 2 rank\\(s\\) \\(TORCHELASTIC_RESTART_COUNT=1\\)")))
      << log;
  std::printf("%s\n", resumed.str(0).c_str());  // in CI's log: which checkpoint, position and world
  EXPECT_GE(std::stoi(resumed[1]), 20) << "the newest mid-epoch checkpoint at least";
  const int epoch = std::stoi(resumed[2]);  // counted from 1
  const std::int64_t position = std::stoll(resumed[3]);
  EXPECT_EQ(std::stoll(resumed[4]), position) << "the old world trained the positions before it, once each";
  EXPECT_NE(log.find("Epoch 2 |", static_cast<std::size_t>(resumed.position(0))), std::string::npos) << log;

  // The interrupted epoch's samples: the old world's positions [0, position), then the new world's from
  // there, in full batches of 4 (training drops a last partial batch).
  constexpr std::int64_t kSamples = 3 * 400;
  constexpr std::uint64_t kSeed = 3;  // tiny_folder_args' --seed
  std::vector<std::int64_t> trained;
  for (int r = 0; r < 4; ++r) {
    data::DistributedSampler old_world(kSamples, 4, r, true, kSeed);
    old_world.set_epoch(static_cast<std::uint64_t>(epoch - 1));
    const std::vector<std::int64_t> share = old_world.indices();
    trained.insert(trained.end(), share.begin(), share.begin() + position / 4);
  }
  for (int r = 0; r < 2; ++r) {
    data::DistributedSampler new_world(kSamples, 2, r, true, kSeed);
    new_world.set_epoch(static_cast<std::uint64_t>(epoch - 1));
    new_world.set_position(position);
    const std::vector<std::int64_t> share = new_world.indices();
    trained.insert(trained.end(), share.begin(),
                   share.begin() + static_cast<std::ptrdiff_t>(share.size() / 4 * 4));
  }
  std::vector<int> times(kSamples, 0);
  for (const std::int64_t i : trained) ++times[static_cast<std::size_t>(i)];
  std::vector<std::int64_t> twice, lost;
  for (std::int64_t i = 0; i < kSamples; ++i) {
    if (times[static_cast<std::size_t>(i)] > 1) twice.push_back(i);
    if (times[static_cast<std::size_t>(i)] == 0) lost.push_back(i);
  }
  EXPECT_TRUE(twice.empty() && lost.empty())
      << "epoch " << epoch << " resumed at sampler position " << position << ": " << twice.size()
      << " sample(s) trained twice (" << fmt::format("{}", fmt::join(twice, ",")) << "), " << lost.size()
      << " never (" << fmt::format("{}", fmt::join(lost, ",")) << ")";
  EXPECT_EQ(static_cast<std::int64_t>(trained.size()), kSamples);
}

}  // namespace
}  // namespace engine::apps
