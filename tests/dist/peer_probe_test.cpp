// PeerProbe (dist/peer_probe.h) on one machine: every rank's entry read back from the store; a rank whose
// process answers, one whose port is closed (the process is gone), one whose kernel accepts but no thread
// answers (a stopped process), and a malformed entry, each reported as such, naming the rank, host and
// address.

#include "dist/peer_probe.h"

#include <arpa/inet.h>
#include <chrono>
#include <netinet/in.h>
#include <string>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include <gtest/gtest.h>

#include "dist/tcp_store.h"
#include "tests/common/error_of.h"

namespace engine::dist {
namespace {

using std::chrono::milliseconds;
using testing::error_of;

std::string host_name() {
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  return name;
}

// A listening socket on 127.0.0.1 that never accepts: the kernel completes connections, nobody answers.
struct SilentListener {
  SilentListener() {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    const bool listening = ::bind(fd, reinterpret_cast<sockaddr*>(&a), len) == 0 && ::listen(fd, 8) == 0 &&
                           ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0;
    port = listening ? ntohs(a.sin_port) : 0;
  }
  ~SilentListener() { ::close(fd); }
  int fd = -1;
  int port = 0;
};

void publish(TcpStore& store, int rank, const std::string& entry) {
  store.set("engine_peer/" + std::to_string(rank), std::vector<char>(entry.begin(), entry.end()));
}

TEST(PeerProbe, NamesTheRanksThatAreGoneOrSilent) {
  const int port = find_free_port();
  TcpStore store0("127.0.0.1", port, /*is_server=*/true, milliseconds(5000));
  TcpStore store1("127.0.0.1", port, /*is_server=*/false, milliseconds(5000));
  SilentListener silent;
  ASSERT_GT(silent.port, 0) << "could not listen on 127.0.0.1";
  publish(store0, 2, "2 stoppedhost 127.0.0.1 " + std::to_string(silent.port));
  publish(store0, 3, "3 deadhost 127.0.0.1 " + std::to_string(find_free_port()));  // nobody listens there

  std::unique_ptr<PeerProbe> rank1;
  std::thread other([&] { rank1 = std::make_unique<PeerProbe>(store1, 1, 4, "127.0.0.1"); });
  PeerProbe rank0(store0, 0, 4, "127.0.0.1");
  other.join();
  ASSERT_EQ(rank0.peers().size(), 4u);
  EXPECT_EQ(rank0.peers()[1].host, host_name());
  EXPECT_EQ(rank0.peers()[2].host, "stoppedhost");

  const auto reports = rank0.probe(milliseconds(300));
  ASSERT_EQ(reports.size(), 3u);  // every rank but this one
  EXPECT_EQ(reports[0].state, PeerState::Answered);
  EXPECT_EQ(reports[1].state, PeerState::NoAnswer);
  EXPECT_EQ(reports[2].state, PeerState::Refused);
  const std::string text = describe_lost_peers(reports, milliseconds(300));
  EXPECT_NE(text.find("no answer within 300 ms from rank 2 on host stoppedhost (127.0.0.1): stopped or hung"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("rank 3 on host deadhost (127.0.0.1): its host answers but the process is gone"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("rank 1 "), std::string::npos) << "rank 1 answered: " << text;

  rank1.reset();  // rank 1's process ends: its port closes
  const auto later = rank0.probe(milliseconds(300));
  EXPECT_EQ(later[0].state, PeerState::Refused);
  EXPECT_EQ(describe_lost_peers({reports[0]}, milliseconds(300)), "") << "all answered: nothing to say";
}

TEST(PeerProbe, AMalformedEntryIsAnErrorNamingTheRank) {
  const int port = find_free_port();
  TcpStore store("127.0.0.1", port, /*is_server=*/true, milliseconds(2000));
  publish(store, 1, "garbage");
  EXPECT_NE(error_of([&] { PeerProbe probe(store, 0, 2, "127.0.0.1"); }).find("rank 1's entry 'garbage'"),
            std::string::npos);
}

}  // namespace
}  // namespace engine::dist
