// cnn_train under the real launchers (label cpu): Open MPI's mpirun, and PyTorch's torchrun (static
// rendezvous, c10d rendezvous, and --max-restarts with a rank killed mid-training). Each run must end exactly
// as our own launcher's two-rank run does (the same final checkpoint, bit for bit), which also says that
// both ranks agreed all along (the ranks check their replicas are bitwise equal before every evaluation).
// mpirun comes from Debian's openmpi-bin (scripts/install-deps.sh); PyTorch is not part of CI (a
// multi-gigabyte download): those tests skip, saying how to enable them (tests/common/pytorch_tools.h).

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <signal.h>
#include <string>
#include <unistd.h>
#include <vector>

#include <gtest/gtest.h>

#include "dist/tcp_store.h"
#include "optim/safetensors.h"
#include "tests/common/pytorch_tools.h"
#include "tests/cpu/cnn_train_restart_test_util.h"
#include "tests/cpu/cnn_train_test_util.h"

namespace engine::apps {
namespace {

using testing::LiveProcess;
using testing::with_args;

// The shared tiny run on the CPU; lr 0.005 (not 0.05): the long runs here take batches of 4, on which the
// toy data set's near-constant classes make BatchNorm blow 0.05 up to a NaN loss within 30 steps.
std::vector<std::string> cpu_args(const std::string& root, const std::string& dir, int batch, int epochs) {
  auto args = with_args({"--cpu"}, testing::tiny_folder_args(root, dir, "cnn3", batch, epochs));
  if (batch < 8) *(std::find(args.begin(), args.end(), "--lr") + 1) = "0.005";
  return args;
}

void expect_same_tensors(const std::string& a, const std::string& b) {
  const auto diffs = testing::checkpoint_differences(a, b);
  ASSERT_FALSE(diffs.empty()) << a;
  for (const testing::TensorDifference& d : diffs)
    EXPECT_EQ(d.worst, 0.0) << d.name << ": " << a << " vs " << b;
}

// The reference: our launcher's two CPU ranks on the same run.
std::string reference_run(const std::string& root, const std::string& name, int batch, int epochs,
                          const std::vector<std::string>& extra) {
  const std::string dir = testing::temp_dir(name);
  const testing::RunResult r = testing::run_train(with_args(cpu_args(root, dir, batch, epochs), extra));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return dir + "/epoch" + std::to_string(epochs) + ".safetensors";
}

// The environment of a process started by `pid` (NAME=value entries).
std::string environ_of(pid_t pid) {
  std::string env = testing::file_bytes("/proc/" + std::to_string(pid) + "/environ");
  for (char& c : env) c = c == '\0' ? '\n' : c;
  return "\n" + env;
}

TEST(CnnTrainLaunchers, MpirunStartsTwoRanksThatTrainAsOurLaunchersDo) {
  if (engine::testing::command_output("command -v mpirun").empty()) {
    GTEST_SKIP() << "mpirun is not installed: apt-get install openmpi-bin (scripts/install-deps.sh does)";
  }
  ::setenv("OPENBLAS_NUM_THREADS", "1", 0);
  const std::string root = testing::tiny_folder_dataset("launch_mpi_data");
  const std::string reference = reference_run(root, "launch_mpi_ref", 8, 2, {"--nproc", "2"});
  const std::string dir = testing::temp_dir("launch_mpi");
  std::vector<std::string> mpirun = {"mpirun",
                                     "-np",
                                     "2",
                                     "--oversubscribe",
                                     "--tag-output",
                                     "-x",
                                     "MASTER_PORT=" + std::to_string(dist::find_free_port())};
  if (::geteuid() == 0) mpirun.emplace_back("--allow-run-as-root");  // containers and CI run as root
  LiveProcess run(with_args(with_args(mpirun, {testing::program_path("cnn_train")}),
                            with_args(cpu_args(root, dir, 8, 2), {"--log-all-ranks"})));
  ASSERT_EQ(run.finish(300), 0) << run.output();
  EXPECT_NE(run.output().find("2 rank(s) through gloo (started by openmpi)"), std::string::npos)
      << run.output();
  EXPECT_NE(run.output().find("[1,0]<stdout>:[CPU] Epoch 2 |"), std::string::npos) << run.output();
  EXPECT_NE(run.output().find("[1,1]<stdout>:[CPU] Epoch 2 |"), std::string::npos) << run.output();
  expect_same_tensors(reference, dir + "/epoch2.safetensors");
}

// torchrun's agent serves the store at --master_port (static rendezvous) or at the c10d rendezvous endpoint:
// the ranks are its clients under /worker/attempt_0 (before this, rank 0 tried to serve there and failed
// with "address already in use").
TEST(CnnTrainLaunchers, TorchrunStaticAndC10dRendezvousTrainAsOurLauncherDoes) {
  SKIP_WITHOUT_PYTHON_MODULES("torch", "torch.distributed.run");  // what torchrun runs
  const engine::testing::PyTorchTools& torch = engine::testing::pytorch_tools();
  if (torch.torchrun.empty()) GTEST_SKIP() << engine::testing::kHowToEnablePyTorch;
  ::setenv("OPENBLAS_NUM_THREADS", "1", 0);
  const std::string root = testing::tiny_folder_dataset("launch_torchrun_data");
  const std::string reference = reference_run(root, "launch_torchrun_ref", 8, 2, {"--nproc", "2"});
  const std::string port = std::to_string(dist::find_free_port());
  const std::vector<std::vector<std::string>> rendezvous = {
      {"--nnodes=1", "--master_port=" + port},
      {"--nnodes=1", "--rdzv-backend=c10d", "--rdzv-endpoint=127.0.0.1:" + port}};
  for (const auto& how : rendezvous) {
    const std::string dir = testing::temp_dir("launch_torchrun_" + how.back().substr(2, 6));
    LiveProcess run(with_args(with_args(with_args({torch.torchrun, "--nproc_per_node=2"}, how),
                                        {"--no-python", testing::program_path("cnn_train")}),
                              cpu_args(root, dir, 8, 2)));
    ASSERT_EQ(run.finish(300), 0) << "torch " << torch.version << "\n" << run.output();
    EXPECT_NE(run.output().find("2 rank(s) through gloo (started by torchrun)"), std::string::npos)
        << run.output();
    EXPECT_NE(run.output().find("store torchrun's agent at "), std::string::npos) << run.output();
    EXPECT_NE(run.output().find("(keys under /worker/attempt_0)"), std::string::npos) << run.output();
    expect_same_tensors(reference, dir + "/epoch2.safetensors");
  }
}

// torchrun --max-restarts=1 and a rank killed (SIGKILL) mid-epoch once `saved` was written: torchrun stops
// the other rank and starts both again (TORCHELASTIC_RESTART_COUNT=1, a fresh key prefix); --resume auto
// continues from the newest mid-epoch checkpoint, and the run ends where the uninterrupted one does, bit for
// bit. Rank 0 writes the checkpoints, rank 1 does not: either may fall (scripts/faults.sh's torchrun-restart
// kind kills one at random moments).
void expect_torchrun_restart_after_killing(int victim_rank, const std::string& saved,
                                           const std::string& name) {
  const engine::testing::PyTorchTools& torch = engine::testing::pytorch_tools();
  ::setenv("OPENBLAS_NUM_THREADS", "1", 0);
  const std::string root = testing::tiny_folder_dataset(name + "_data", 400);
  const std::vector<std::string> extra = {"--resume", "auto", "--save-every-steps", "20"};
  const std::string reference = reference_run(root, name + "_ref", 4, 2, with_args({"--nproc", "2"}, extra));
  const std::string dir = testing::temp_dir(name);
  LiveProcess run(with_args({torch.torchrun, "--nproc_per_node=2", "--max-restarts=1",
                             "--master_port=" + std::to_string(dist::find_free_port()), "--no-python",
                             testing::program_path("cnn_train")},
                            with_args(cpu_args(root, dir, 4, 2), extra)));
  ASSERT_TRUE(run.wait_for("saved " + dir + "/" + saved, 300)) << run.output();
  pid_t victim = -1;
  for (const pid_t child : testing::child_pids(run.pid())) {
    if (environ_of(child).find("\nRANK=" + std::to_string(victim_rank) + "\n") != std::string::npos)
      victim = child;
  }
  ASSERT_GT(victim, 0) << "rank " << victim_rank << " not found among torchrun's children";
  ::kill(victim, SIGKILL);
  ASSERT_EQ(run.finish(300), 0) << "torch " << torch.version << "\n" << run.output();
  EXPECT_NE(run.output().find("(keys under /worker/attempt_1)"), std::string::npos) << run.output();
  const std::size_t resumed = run.output().find("cnn_train: resumed from " + dir + "/step");
  ASSERT_NE(resumed, std::string::npos) << run.output();
  EXPECT_NE(run.output().find("(TORCHELASTIC_RESTART_COUNT=1)", resumed), std::string::npos) << run.output();
  expect_same_tensors(reference, dir + "/epoch2.safetensors");
}

TEST(CnnTrainLaunchers, TorchrunRestartsAfterAKilledRankAndEndsAsTheUninterruptedRun) {
  SKIP_WITHOUT_PYTHON_MODULES("torch", "torch.distributed.run");  // what torchrun runs
  if (engine::testing::pytorch_tools().torchrun.empty()) GTEST_SKIP() << engine::testing::kHowToEnablePyTorch;
  expect_torchrun_restart_after_killing(1, "step20.safetensors", "launch_restart");
}

TEST(CnnTrainLaunchers, TorchrunRestartsAfterTheCheckpointWritingRankIsKilled) {
  SKIP_WITHOUT_PYTHON_MODULES("torch", "torch.distributed.run");
  if (engine::testing::pytorch_tools().torchrun.empty()) GTEST_SKIP() << engine::testing::kHowToEnablePyTorch;
  expect_torchrun_restart_after_killing(0, "step40.safetensors", "launch_restart_rank0");
}

}  // namespace
}  // namespace engine::apps
