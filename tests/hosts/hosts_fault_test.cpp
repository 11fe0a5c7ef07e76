// Faults on the wire between two hosts (tests/hosts/virtual_hosts.h), two CPU ranks on each, mid-epoch after
// the first mid-epoch checkpoint: host 1's link set down; host 1's ranks stopped (SIGSTOP: stuck, not dead);
// the rendezvous host (host 0, rank 0 serves the store there) lost: its ranks killed and its link down. Each
// ends with every surviving rank exited non-zero within --timeout plus a margin (gloo's timeout, then the
// probe of dist/peer_probe.h, at most 3 s), its message naming the lost ranks and their host, and every
// checkpoint on disk loadable. And one that must not fail: a link limited by tc's tbf trains to the same
// weights, bit for bit, as four ranks on one host.

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <signal.h>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "dist/tcp_store.h"
#include "optim/safetensors.h"
#include "tests/hosts/multi_host_util.h"

namespace engine::apps {
namespace {

using engine::testing::VirtualHosts;
using testing::kWorld;
using testing::LiveProcess;
using testing::with_args;

constexpr double kTimeout = 5.0;       // --timeout
constexpr double kMargin = 3.0 + 4.0;  // the probe's 3 s, and time to exit on a loaded 2-core machine

// The last line of a rank's output: its error.
std::string last_line(const std::string& text) {
  const std::size_t end = text.find_last_not_of('\n');
  if (end == std::string::npos) return "";
  const std::size_t start = text.rfind('\n', end);
  return text.substr(start == std::string::npos ? 0 : start + 1,
                     end + 1 - (start == std::string::npos ? 0 : start + 1));
}

class HostFault : public ::testing::Test {
 protected:
  // Starts the four ranks on a run long enough to be interrupted (75 steps an epoch, a checkpoint every 10)
  // and waits for the first mid-epoch checkpoint.
  void start() {
    const std::string why = VirtualHosts::unavailable();
    if (!why.empty()) GTEST_SKIP() << why;
    root_ = testing::tiny_folder_dataset("hosts_fault_data", 400);
    dir_ = testing::temp_dir("hosts_fault");
    hosts_ = std::make_unique<VirtualHosts>();
    ranks_ = testing::start_all_ranks(
        *hosts_, dist::find_free_port(),
        with_args(testing::host_run_args(root_, dir_, 4, 2),
                  {"--timeout", std::to_string(kTimeout), "--save-every-steps", "10"}));
    ASSERT_TRUE(ranks_[0]->wait_for("saved " + dir_ + "/step10.safetensors", 120)) << ranks_[0]->output();
  }

  // Rank r ends non-zero within the bound, naming `lost` (e.g. "rank 2 on host node1 (10.77.0.2)").
  void expect_ends_naming(int r, const std::vector<std::string>& lost) {
    const int code = ranks_[r]->finish(kTimeout + kMargin - testing::seconds_since(fault_));
    ASSERT_NE(code, -1) << "rank " << r << " still runs " << kTimeout + kMargin << " s after the fault\n"
                        << ranks_[r]->output();
    EXPECT_NE(code, 0) << ranks_[r]->output();
    std::printf("rank %d ended (exit %d) %.1f s after the fault: %s\n", r, code,
                testing::seconds_since(fault_), last_line(ranks_[r]->output()).c_str());
    for (const std::string& who : lost)
      EXPECT_NE(ranks_[r]->output().find(who), std::string::npos) << "rank " << r << " names " << who << ":\n"
                                                                  << ranks_[r]->output();
  }

  // Every checkpoint written before the fault reads back whole, with its step.
  void expect_checkpoints_load() {
    int count = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir_)) {
      if (e.path().extension() != ".safetensors") continue;
      const optim::SafetensorsFile f = optim::SafetensorsFile::read(e.path().string());
      EXPECT_FALSE(f.entries().empty()) << e.path();
      EXPECT_EQ(f.metadata().count("step"), 1u) << e.path();
      ++count;
    }
    EXPECT_GE(count, 1) << dir_;
  }

  void mark_fault() { fault_ = std::chrono::steady_clock::now(); }

  std::string root_, dir_;
  std::unique_ptr<VirtualHosts> hosts_;
  std::vector<std::unique_ptr<LiveProcess>> ranks_;
  std::chrono::steady_clock::time_point fault_;
};

const std::string kHost0Ranks[] = {"rank 0 on host node0 (10.77.0.1)", "rank 1 on host node0 (10.77.0.1)"};
const std::string kHost1Ranks[] = {"rank 2 on host node1 (10.77.0.2)", "rank 3 on host node1 (10.77.0.2)"};

TEST_F(HostFault, ALinkSetDownEndsEveryRankNamingTheOtherHost) {
  start();
  if (IsSkipped() || HasFatalFailure()) return;
  hosts_->set_link(1, false);
  mark_fault();
  for (int r = 0; r < 2; ++r) expect_ends_naming(r, {kHost1Ranks[0], kHost1Ranks[1]});
  for (int r = 2; r < 4; ++r) expect_ends_naming(r, {kHost0Ranks[0], kHost0Ranks[1]});
  expect_checkpoints_load();
}

TEST_F(HostFault, StoppedRanksEndTheOthersNamingThem) {
  start();
  if (IsSkipped() || HasFatalFailure()) return;
  ranks_[2]->signal(SIGSTOP);
  ranks_[3]->signal(SIGSTOP);
  mark_fault();
  for (int r = 0; r < 2; ++r) expect_ends_naming(r, {"no answer within 3000 ms from " + kHost1Ranks[0]});
  expect_checkpoints_load();
}

TEST_F(HostFault, LosingTheRendezvousHostEndsTheOthersNamingIt) {
  start();
  if (IsSkipped() || HasFatalFailure()) return;
  ranks_[0]->signal(SIGKILL);
  ranks_[1]->signal(SIGKILL);
  hosts_->set_link(0, false);
  mark_fault();
  for (int r = 2; r < 4; ++r) expect_ends_naming(r, {kHost0Ranks[0], kHost0Ranks[1]});
  expect_checkpoints_load();
}

// 100 Mbit/s each way (tc tbf on both ends): the same weights as the unlimited one-host run, and tc's
// counters show the limit was reached (overlimits), so the run really went through it.
TEST(HostLink, ARateLimitedLinkTrainsToTheSameWeights) {
  SKIP_WITHOUT_VIRTUAL_HOSTS();
  const std::string root = testing::tiny_folder_dataset("hosts_tbf_data");
  const std::vector<std::string> limit = {"--limit-train", "32"};
  const std::string reference = testing::one_host_reference(root, "hosts_tbf_ref", 4, 1, limit);
  VirtualHosts hosts;
  hosts.limit_rate("100mbit");
  const std::string dir = testing::temp_dir("hosts_tbf");
  auto ranks = testing::start_all_ranks(hosts, dist::find_free_port(),
                                        with_args(testing::host_run_args(root, dir, 4, 1), limit));
  for (int r = 0; r < kWorld; ++r)
    ASSERT_EQ(ranks[r]->finish(120), 0) << "rank " << r << "\n" << ranks[r]->output();
  testing::expect_same_tensors(reference, dir + "/epoch1.safetensors");
  const std::string stats =
      engine::testing::command_output("tc -n " + hosts.ns(0) + " -s qdisc show dev " + hosts.link(0));
  EXPECT_NE(stats.find("qdisc tbf"), std::string::npos) << stats;
  EXPECT_EQ(stats.find("overlimits 0 "), std::string::npos) << "the link never reached its limit:\n" << stats;
}

}  // namespace
}  // namespace engine::apps
