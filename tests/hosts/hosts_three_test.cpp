// cnn_train across three hosts joined by a switch (a bridge in a namespace of its own: tests/hosts/
// virtual_hosts.h): two CPU ranks on each started by plain variables, and torchrun's c10d rendezvous with one
// rank on each (skipped where torchrun is not installed). --deterministic: each ends exactly as our
// launcher's ranks of the same world on one host do, bit for bit.

#include <memory>
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

constexpr int kThreeHosts = 3;

TEST(HostsThree, ThreeHostsOnASwitchTrainAsSixRanksOnOneHost) {
  SKIP_WITHOUT_VIRTUAL_HOSTS(kThreeHosts);
  const std::string root = testing::tiny_folder_dataset("hosts_three_data");
  const int world = kThreeHosts * testing::kRanksPerHost;
  const std::string reference = testing::one_host_reference(root, "hosts_three_ref", 4, 1, {}, world);
  VirtualHosts hosts(kThreeHosts);
  const std::string dir = testing::temp_dir("hosts_three");
  auto ranks =
      testing::start_all_ranks(hosts, dist::find_free_port(), testing::host_run_args(root, dir, 4, 1));
  ASSERT_EQ(static_cast<int>(ranks.size()), world);
  for (int r = 0; r < world; ++r)
    ASSERT_EQ(ranks[r]->finish(120), 0) << "rank " << r << "\n" << ranks[r]->output();
  EXPECT_NE(ranks[0]->output().find("6 rank(s) through gloo"), std::string::npos) << ranks[0]->output();
  testing::expect_same_tensors(reference, dir + "/epoch1.safetensors");
}

// torchrun --nnodes=3 --nproc_per_node=1 on each host, the c10d rendezvous at host 0's address.
TEST(HostsThree, TorchrunC10dRendezvousAcrossThreeHosts) {
  SKIP_WITHOUT_VIRTUAL_HOSTS(kThreeHosts);
  SKIP_WITHOUT_PYTHON_MODULES("torch", "torch.distributed.run");
  const engine::testing::PyTorchTools& torch = engine::testing::pytorch_tools();
  if (torch.torchrun.empty()) GTEST_SKIP() << engine::testing::kHowToEnablePyTorch;
  const std::string root = testing::tiny_folder_dataset("hosts_three_torchrun_data");
  const std::string reference =
      testing::one_host_reference(root, "hosts_three_torchrun_ref", 4, 1, {}, kThreeHosts);
  VirtualHosts hosts(kThreeHosts);
  const std::string dir = testing::temp_dir("hosts_three_torchrun");
  const std::string endpoint = VirtualHosts::address(0) + ":" + std::to_string(dist::find_free_port());
  std::vector<std::unique_ptr<testing::LiveProcess>> nodes;
  for (int h = 0; h < kThreeHosts; ++h) {
    nodes.push_back(std::make_unique<testing::LiveProcess>(hosts.on_host(
        h, {"OMP_NUM_THREADS=1", "OPENBLAS_NUM_THREADS=1"},
        with_args(
            {torch.torchrun, "--nnodes=3", "--nproc_per_node=1", "--rdzv-backend=c10d", "--rdzv-id=three",
             "--rdzv-endpoint=" + endpoint, "--no-python", testing::program_path("cnn_train")},
            testing::host_run_args(root, dir, 4, 1)))));
  }
  std::string all;
  for (int h = 0; h < kThreeHosts; ++h) {
    ASSERT_EQ(nodes[h]->finish(300), 0) << "torch " << torch.version << ", host " << h << "\n"
                                        << nodes[h]->output();
    all += nodes[h]->output();
  }
  EXPECT_NE(all.find("3 rank(s) through gloo (started by torchrun)"), std::string::npos) << all;
  EXPECT_NE(all.find("store torchrun's agent at node"), std::string::npos) << all;
  testing::expect_same_tensors(reference, dir + "/epoch1.safetensors");
}

}  // namespace
}  // namespace engine::apps
