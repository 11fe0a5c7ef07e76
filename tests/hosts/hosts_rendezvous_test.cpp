// The rendezvous endpoint reachable from some hosts only (../shared/BAD_INPUTS.md, "Several hosts"): host 1's
// link is down before the job starts, so host 0's ranks reach the store on their own host and host 1's reach
// nothing. Every rank ends non-zero within --timeout plus a margin, naming the store: host 1's saying it
// could not reach it, host 0's that the other ranks never registered there.

#include <chrono>
#include <cstdio>
#include <string>

#include <gtest/gtest.h>

#include "dist/tcp_store.h"
#include "tests/hosts/multi_host_util.h"

namespace engine::apps {
namespace {

using engine::testing::VirtualHosts;
using testing::kWorld;
using testing::with_args;

constexpr double kTimeout = 5.0;       // --timeout
constexpr double kMargin = 3.0 + 7.0;  // the probe's 3 s, and start-up and exit on a loaded 2-core machine

TEST(HostsRendezvous, AStoreReachableFromOneHostOnlyEndsEveryRankNamingWhatWasMissing) {
  SKIP_WITHOUT_VIRTUAL_HOSTS();
  const std::string root = testing::tiny_folder_dataset("hosts_rdzv_data");
  VirtualHosts hosts;
  hosts.set_link(1, false);
  const int port = dist::find_free_port();
  const auto start = std::chrono::steady_clock::now();
  auto ranks =
      testing::start_all_ranks(hosts, port,
                               with_args(testing::host_run_args(root, testing::temp_dir("hosts_rdzv"), 4, 1),
                                         {"--timeout", std::to_string(kTimeout)}));
  const std::string endpoint = VirtualHosts::address(0) + ":" + std::to_string(port);
  for (int r = 0; r < kWorld; ++r) {
    const int code = ranks[r]->finish(kTimeout + kMargin - testing::seconds_since(start));
    ASSERT_NE(code, -1) << "rank " << r << " still runs " << kTimeout + kMargin << " s after its start\n"
                        << ranks[r]->output();
    EXPECT_NE(code, 0) << ranks[r]->output();
    std::printf("rank %d ended (exit %d) after %.1f s:\n%s\n", r, code, testing::seconds_since(start),
                ranks[r]->output().c_str());
    EXPECT_NE(ranks[r]->output().find(endpoint), std::string::npos) << ranks[r]->output();
    const std::string why = r < 2 ? "not set within" : "could not reach the rendezvous store";
    EXPECT_NE(ranks[r]->output().find(why), std::string::npos) << ranks[r]->output();
  }
}

}  // namespace
}  // namespace engine::apps
