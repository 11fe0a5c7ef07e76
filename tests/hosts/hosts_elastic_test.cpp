// Elastic across hosts: torchrun --nnodes=1:2 --max-restarts=1 on each of two hosts (tests/hosts/
// virtual_hosts.h), two CPU ranks each, --resume auto --save-every-steps 10; host 1 is lost mid-epoch (its
// torchrun and ranks killed, its link down). Host 0's torchrun restarts its workers in a world of 2, which
// resume from the newest mid-epoch checkpoint (the sampler continues at its position, so the new world trains
// every sample of the epoch the old one had not: tests/cpu/distributed_sampler_test.cpp) and finish; the log
// says which checkpoint and how many ranks. Skipped where torchrun is not installed.

#include <signal.h>
#include <string>
#include <vector>

#include <gtest/gtest.h>

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
  ASSERT_TRUE(nodes[0]->wait_for("saved " + dir + "/step20.safetensors", 300)) << nodes[0]->output();
  ::kill(-nodes[1]->pid(), SIGKILL);  // host 1's torchrun and its workers (its own process group)
  hosts.set_link(1, false);
  ASSERT_EQ(nodes[0]->finish(300), 0) << "torch " << torch.version << "\n" << nodes[0]->output();
  const std::size_t resumed = nodes[0]->output().find("cnn_train: resumed from " + dir + "/step");
  ASSERT_NE(resumed, std::string::npos) << nodes[0]->output();
  EXPECT_NE(nodes[0]->output().find("on 2 rank(s) (TORCHELASTIC_RESTART_COUNT=1)", resumed),
            std::string::npos)
      << nodes[0]->output();
  EXPECT_NE(nodes[0]->output().find("Epoch 2 |", resumed), std::string::npos) << nodes[0]->output();
}

}  // namespace
}  // namespace engine::apps
