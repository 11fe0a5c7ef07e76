// cnn_train across two hosts (network namespaces with their own addresses, tests/hosts/virtual_hosts.h),
// two CPU ranks on each: started by plain variables with MASTER_ADDR = host 0's address, by Slurm's
// variables with no MASTER_ADDR (node names that resolve through the hosts' /etc/hosts), and by torchrun's
// c10d rendezvous (skipped where torchrun is not installed). Each run ends exactly as our launcher's four
// ranks on one host do, bit for bit. The interface gloo binds: the default reaches the other host; a wrong
// GLOO_SOCKET_IFNAME is an error at once on its rank, and the others end within --timeout. mpirun across the
// two hosts, its rsh agent entering the namespaces.

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "dist/tcp_store.h"
#include "tests/common/environment.h"
#include "tests/common/pytorch_tools.h"
#include "tests/hosts/multi_host_util.h"

namespace engine::apps {
namespace {

using engine::testing::VirtualHosts;
using testing::kWorld;
using testing::with_args;

TEST(Hosts, TwoHostsOfTwoRanksTrainAsFourRanksOnOneHost) {
  SKIP_WITHOUT_VIRTUAL_HOSTS();
  const std::string root = testing::tiny_folder_dataset("hosts_plain_data");
  const std::string reference = testing::one_host_reference(root, "hosts_plain_ref", 4, 2);
  VirtualHosts hosts;
  const std::string dir = testing::temp_dir("hosts_plain");
  auto ranks =
      testing::start_all_ranks(hosts, dist::find_free_port(), testing::host_run_args(root, dir, 4, 2));
  for (int r = 0; r < kWorld; ++r)
    ASSERT_EQ(ranks[r]->finish(120), 0) << "rank " << r << "\n" << ranks[r]->output();
  EXPECT_NE(ranks[0]->output().find("4 rank(s) through gloo (started by torchrun)"), std::string::npos)
      << ranks[0]->output();
  EXPECT_NE(ranks[0]->output().find("store served by rank 0 at 10.77.0.1:"), std::string::npos)
      << ranks[0]->output();
  testing::expect_same_tensors(reference, dir + "/epoch2.safetensors");
}

// Our own launcher on each host: cnn_train --nproc 2 --nnodes 2 --node-rank K --master-addr <host 0>.
TEST(Hosts, OurLauncherOnEachHostTrainsAsFourRanksOnOneHost) {
  SKIP_WITHOUT_VIRTUAL_HOSTS();
  const std::string root = testing::tiny_folder_dataset("hosts_launcher_data");
  const std::string reference = testing::one_host_reference(root, "hosts_launcher_ref", 4, 1);
  VirtualHosts hosts;
  const std::string dir = testing::temp_dir("hosts_launcher");
  const std::string port = std::to_string(dist::find_free_port());
  std::vector<std::unique_ptr<testing::LiveProcess>> nodes;
  for (int h = 0; h < VirtualHosts::kHosts; ++h) {
    nodes.push_back(std::make_unique<testing::LiveProcess>(hosts.on_host(
        h, {"OMP_NUM_THREADS=1"},
        with_args({testing::program_path("cnn_train"), "--nproc", "2", "--nnodes", "2", "--node-rank",
                   std::to_string(h), "--master-addr", VirtualHosts::address(0), "--master-port", port},
                  testing::host_run_args(root, dir, 4, 1)))));
  }
  for (int h = 0; h < VirtualHosts::kHosts; ++h)
    ASSERT_EQ(nodes[h]->finish(120), 0) << "host " << h << "\n" << nodes[h]->output();
  EXPECT_NE(nodes[0]->output().find("4 rank(s) through gloo (started by launcher)"), std::string::npos)
      << nodes[0]->output();
  testing::expect_same_tensors(reference, dir + "/epoch1.safetensors");
}

// Several nodes need node 0's address and port on every node, and a node rank inside the job (exit 2).
TEST(Hosts, OurLauncherRefusesSeveralNodesWithoutAnEndpoint) {
  const std::string root = testing::tiny_folder_dataset("hosts_launcher_bad");
  const std::vector<std::string> base = {
      "--cpu", "--dataset", "folder:" + root, "--epochs", "1", "--checkpoint-dir", ""};
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--nnodes", "2"}, "--nnodes 2: every node needs --master-addr (node 0's address) and --master-port"},
      {{"--nnodes", "2", "--master-addr", "10.0.0.1"}, "--master-port"},
      {{"--nnodes", "2", "--node-rank", "2", "--master-addr", "a", "--master-port", "1234"},
       "--node-rank 2 is not a node of --nnodes 2"},
  };
  for (const auto& [args, expected] : cases) {
    const testing::RunResult r = testing::run_train(with_args(base, args));
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find(expected), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("[rank "), std::string::npos) << "no rank may start:\n" << r.output;
  }
}

// srun's variables on each host, the node list in Slurm's compressed form: every rank derives the store's
// host (node0, resolved by the host's /etc/hosts) and port (from SLURM_JOB_ID) by itself.
TEST(Hosts, SlurmVariablesFindRankZerosHostWithoutMasterAddr) {
  SKIP_WITHOUT_VIRTUAL_HOSTS();
  const std::string root = testing::tiny_folder_dataset("hosts_slurm_data");
  const std::string reference = testing::one_host_reference(root, "hosts_slurm_ref", 4, 1);
  VirtualHosts hosts;
  const std::string dir = testing::temp_dir("hosts_slurm");
  std::vector<std::unique_ptr<testing::LiveProcess>> ranks;
  for (int r = 0; r < kWorld; ++r) {
    const std::vector<std::string> env = {"OMP_NUM_THREADS=1",
                                          "SLURM_PROCID=" + std::to_string(r),
                                          "SLURM_LOCALID=" + std::to_string(r % 2),
                                          "SLURM_NTASKS=4",
                                          "SLURM_NNODES=2",
                                          "SLURM_NODEID=" + std::to_string(r / 2),
                                          "SLURM_JOB_ID=4242",
                                          "SLURM_STEP_NODELIST=node[0-1]",
                                          "SLURM_NODELIST=node[0-1]"};
    ranks.push_back(std::make_unique<testing::LiveProcess>(hosts.on_host(
        r / 2, env,
        with_args({testing::program_path("cnn_train")}, testing::host_run_args(root, dir, 4, 1)))));
  }
  for (int r = 0; r < kWorld; ++r)
    ASSERT_EQ(ranks[r]->finish(120), 0) << "rank " << r << "\n" << ranks[r]->output();
  EXPECT_NE(ranks[0]->output().find("4 rank(s) through gloo (started by slurm)"), std::string::npos)
      << ranks[0]->output();
  EXPECT_NE(ranks[0]->output().find("at node0:19242"), std::string::npos) << ranks[0]->output();
  testing::expect_same_tensors(reference, dir + "/epoch1.safetensors");
}

// mpirun on host 0 starting two ranks there and two on host 1: Open MPI's rsh agent is a script that enters
// the host's namespace where a cluster would ssh to it; OMPI_COMM_WORLD_* say who is who, MASTER_ADDR (which
// mpirun across nodes needs, dist/bootstrap.h) names host 0.
TEST(Hosts, MpirunAcrossTwoHostsTrainsAsFourRanksOnOneHost) {
  SKIP_WITHOUT_VIRTUAL_HOSTS();
  SKIP_WITHOUT_TOOL("mpirun");
  const std::string root = testing::tiny_folder_dataset("hosts_mpirun_data");
  const std::string reference = testing::one_host_reference(root, "hosts_mpirun_ref", 4, 1);
  VirtualHosts hosts;
  const std::string dir = testing::temp_dir("hosts_mpirun");
  const std::string agent = dir + "/enter_host.sh";
  std::ofstream(agent) << "#!/bin/sh\n# Open MPI's rsh agent: [options] host command...\n"
                       << "while [ \"${1#-}\" != \"$1\" ]; do shift; done\n"
                       << "case \"$1\" in node0) ns=" << hosts.ns(0) << ";; node1) ns=" << hosts.ns(1)
                       << ";; *) echo \"enter_host: unknown host $1\" >&2; exit 1;; esac\n"
                       << "shift\nexec ip netns exec \"$ns\" sh -c \"$*\"\n";
  std::filesystem::permissions(agent, std::filesystem::perms::owner_all);
  testing::LiveProcess run(hosts.on_host(0, {},
                                         with_args({"mpirun",
                                                    "--allow-run-as-root",
                                                    "-np",
                                                    "4",
                                                    "--host",
                                                    "node0:2,node1:2",
                                                    "--mca",
                                                    "plm_rsh_agent",
                                                    agent,
                                                    "--mca",
                                                    "oob_tcp_if_include",
                                                    "10.77.0.0/24",
                                                    "--tag-output",
                                                    "-x",
                                                    "MASTER_ADDR=node0",
                                                    "-x",
                                                    "MASTER_PORT=" + std::to_string(dist::find_free_port()),
                                                    "-x",
                                                    "OMP_NUM_THREADS=1",
                                                    testing::program_path("cnn_train")},
                                                   testing::host_run_args(root, dir + "/out", 4, 1))));
  ASSERT_EQ(run.finish(120), 0) << run.output();
  EXPECT_NE(run.output().find("[1,0]<stdout>:cnn_train: 4 rank(s) through gloo (started by openmpi)"),
            std::string::npos)
      << run.output();
  testing::expect_same_tensors(reference, dir + "/out/epoch1.safetensors");
}

// GLOO_SOCKET_IFNAME on host 1: loopback (from which host 0 cannot be reached) and an interface that does not
// exist are refused at once, naming the variable; the ranks left waiting end within --timeout.
TEST(Hosts, AWrongGlooInterfaceIsAClearErrorNotAHang) {
  SKIP_WITHOUT_VIRTUAL_HOSTS();
  const std::string root = testing::tiny_folder_dataset("hosts_iface_data");
  VirtualHosts hosts;
  const std::string dir = testing::temp_dir("hosts_iface");
  const auto args = with_args(testing::host_run_args(root, dir, 4, 1), {"--timeout", "6"});
  const int port = dist::find_free_port();
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::unique_ptr<testing::LiveProcess>> ranks;
  ranks.push_back(testing::start_rank(hosts, 0, port, args));
  ranks.push_back(testing::start_rank(hosts, 1, port, args));
  ranks.push_back(testing::start_rank(hosts, 2, port, args, {"GLOO_SOCKET_IFNAME=lo"}));
  ranks.push_back(testing::start_rank(hosts, 3, port, args, {"GLOO_SOCKET_IFNAME=eth9"}));
  EXPECT_NE(ranks[2]->finish(20), 0) << ranks[2]->output();
  EXPECT_NE(ranks[2]->output().find("GLOO_SOCKET_IFNAME=lo (lo) gives gloo the address 127.0.0.1, from which "
                                    "the rendezvous store at 10.77.0.1:"),
            std::string::npos)
      << ranks[2]->output();
  EXPECT_NE(ranks[3]->finish(20), 0) << ranks[3]->output();
  EXPECT_NE(ranks[3]->output().find("GLOO_SOCKET_IFNAME=eth9: this host has no interface of that name"),
            std::string::npos)
      << ranks[3]->output();
  EXPECT_NE(ranks[3]->output().find(hosts.link(1) + " (10.77.0.2)"), std::string::npos) << ranks[3]->output();
  EXPECT_LT(testing::seconds_since(start), 5.0) << "the wrong choices are refused before the rendezvous ends";
  for (int r = 0; r < 2; ++r) {
    EXPECT_NE(ranks[r]->finish(20), 0) << ranks[r]->output();
    EXPECT_NE(ranks[r]->output().find("not set within 6000 ms"), std::string::npos) << ranks[r]->output();
  }
  EXPECT_LT(testing::seconds_since(start), 6.0 + 8.0) << "--timeout 6 plus a margin";
}

// torchrun --nnodes=2 on each host, the c10d rendezvous at host 0's address.
TEST(Hosts, TorchrunC10dRendezvousAcrossTwoHosts) {
  SKIP_WITHOUT_VIRTUAL_HOSTS();
  SKIP_WITHOUT_PYTHON_MODULES("torch", "torch.distributed.run");
  const engine::testing::PyTorchTools& torch = engine::testing::pytorch_tools();
  if (torch.torchrun.empty()) GTEST_SKIP() << engine::testing::kHowToEnablePyTorch;
  const std::string root = testing::tiny_folder_dataset("hosts_torchrun_data");
  const std::string reference = testing::one_host_reference(root, "hosts_torchrun_ref", 4, 2);
  VirtualHosts hosts;
  const std::string dir = testing::temp_dir("hosts_torchrun");
  const std::string endpoint = VirtualHosts::address(0) + ":" + std::to_string(dist::find_free_port());
  std::vector<std::unique_ptr<testing::LiveProcess>> nodes;
  for (int h = 0; h < VirtualHosts::kHosts; ++h) {
    nodes.push_back(std::make_unique<testing::LiveProcess>(hosts.on_host(
        h, {"OMP_NUM_THREADS=1"},
        with_args(
            {torch.torchrun, "--nnodes=2", "--nproc_per_node=2", "--rdzv-backend=c10d", "--rdzv-id=hosts",
             "--rdzv-endpoint=" + endpoint, "--no-python", testing::program_path("cnn_train")},
            testing::host_run_args(root, dir, 4, 2)))));
  }
  std::string all;
  for (int h = 0; h < VirtualHosts::kHosts; ++h) {
    ASSERT_EQ(nodes[h]->finish(300), 0) << "torch " << torch.version << ", host " << h << "\n"
                                        << nodes[h]->output();
    all += nodes[h]->output();
  }
  // Rank 0 is on whichever host joined the rendezvous first; its agent serves the workers' store under the
  // host's own name (resolved on the other host through its /etc/hosts).
  EXPECT_NE(all.find("4 rank(s) through gloo (started by torchrun)"), std::string::npos) << all;
  EXPECT_TRUE(all.find("store torchrun's agent at node0:") != std::string::npos ||
              all.find("store torchrun's agent at node1:") != std::string::npos)
      << all;
  testing::expect_same_tensors(reference, dir + "/epoch2.safetensors");
}

}  // namespace
}  // namespace engine::apps
