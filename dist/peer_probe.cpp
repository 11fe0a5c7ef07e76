#include "dist/peer_probe.h"

#include <arpa/inet.h>
#include <cerrno>
#include <fcntl.h>
#include <map>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>

#include "core/error.h"
#include "dist/socket_io.h"

namespace engine::dist {
namespace {

sockaddr_in ipv4(const std::string& address, int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  ENGINE_CHECK(::inet_pton(AF_INET, address.c_str(), &a.sin_addr) == 1,
               "peer probe: '{}' is not an IPv4 address", address);
  return a;
}

std::string this_host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "?";
  return name;
}

// "rank host address port", the entry each rank publishes.
PeerAddress parse_entry(int rank, const std::vector<char>& bytes) {
  const std::string text(bytes.begin(), bytes.end());
  PeerAddress p;
  char host[256] = {}, address[64] = {};
  int r = -1;
  ENGINE_CHECK(std::sscanf(text.c_str(), "%d %255s %63s %d", &r, host, address, &p.port) == 4 && r == rank,
               "peer probe: rank {}'s entry '{}' in the store is malformed", rank, text);
  p.rank = r;
  p.host = host;
  p.address = address;
  return p;
}

// One probe in flight: connecting, then waiting for the answer byte.
struct Attempt {
  int fd = -1;
  bool connected = false;
  bool done = false;
  PeerReport report;
};

void settle(Attempt& a, PeerState state, std::string detail = {}) {
  a.report.state = state;
  a.report.detail = std::move(detail);
  a.done = true;
}

}  // namespace

PeerProbe::PeerProbe(gloo::rendezvous::Store& store, int rank, int world_size, const std::string& address)
    : rank_(rank) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ENGINE_CHECK(listen_fd_ >= 0, "peer probe: socket() failed: {}", net::errno_text(errno));
  try {
    sockaddr_in local = ipv4(address, 0);
    socklen_t len = sizeof local;
    ENGINE_CHECK(::bind(listen_fd_, reinterpret_cast<const sockaddr*>(&local), len) == 0 &&
                     ::listen(listen_fd_, 64) == 0 &&
                     ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&local), &len) == 0,
                 "peer probe: cannot listen on {}: {}", address, net::errno_text(errno));
    ENGINE_CHECK(::pipe2(wake_fds_, O_CLOEXEC) == 0, "peer probe: pipe() failed: {}", net::errno_text(errno));
    thread_ = std::thread([this] { answer_loop(); });
    const std::string mine =
        fmt::format("{} {} {} {}", rank, this_host_name(), address, ntohs(local.sin_port));
    store.set(fmt::format("engine_peer/{}", rank), std::vector<char>(mine.begin(), mine.end()));
    for (int r = 0; r < world_size; ++r) {
      peers_.push_back(parse_entry(r, store.get(fmt::format("engine_peer/{}", r))));
    }
  } catch (...) {
    stop();  // a destructor does not run after a constructor throws: the thread must end here
    throw;
  }
}

PeerProbe::~PeerProbe() { stop(); }

void PeerProbe::stop() {
  if (thread_.joinable()) {
    const char wake = 's';
    (void)!::write(wake_fds_[1], &wake, 1);
    thread_.join();
  }
  for (int* fd : {&listen_fd_, &wake_fds_[0], &wake_fds_[1]}) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
}

void PeerProbe::answer_loop() {
  for (;;) {
    pollfd p[2] = {{listen_fd_, POLLIN, 0}, {wake_fds_[0], POLLIN, 0}};
    if (::poll(p, 2, -1) < 0 && errno != EINTR) return;
    if (p[1].revents != 0) return;
    if ((p[0].revents & POLLIN) == 0) continue;
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) continue;
    const char alive = 'y';
    (void)!::send(fd, &alive, 1, MSG_NOSIGNAL);
    ::close(fd);
  }
}

std::vector<PeerReport> PeerProbe::probe(std::chrono::milliseconds deadline) const {
  std::vector<Attempt> attempts;
  for (const PeerAddress& peer : peers_) {
    if (peer.rank == rank_) continue;
    Attempt a;
    a.report.peer = peer;
    a.fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    const sockaddr_in target = ipv4(peer.address, peer.port);
    if (a.fd < 0) {
      settle(a, PeerState::Unreachable, net::errno_text(errno));
    } else if (::connect(a.fd, reinterpret_cast<const sockaddr*>(&target), sizeof target) == 0) {
      a.connected = true;
    } else if (errno != EINPROGRESS) {
      const int err = errno;
      settle(a, err == ECONNREFUSED ? PeerState::Refused : PeerState::Unreachable, net::errno_text(err));
    }
    attempts.push_back(std::move(a));
  }
  const auto end = net::Clock::now() + deadline;
  for (;;) {
    std::vector<pollfd> fds;
    std::vector<Attempt*> waiting;
    for (Attempt& a : attempts) {
      if (a.done) continue;
      fds.push_back({a.fd, static_cast<short>(a.connected ? POLLIN : POLLOUT), 0});
      waiting.push_back(&a);
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - net::Clock::now());
    if (waiting.empty() || left.count() <= 0) break;
    if (::poll(fds.data(), fds.size(), static_cast<int>(left.count())) < 0 && errno != EINTR) break;
    for (std::size_t i = 0; i < fds.size(); ++i) {
      Attempt& a = *waiting[i];
      if (fds[i].revents == 0) continue;
      if (!a.connected) {
        int err = 0;
        socklen_t len = sizeof err;
        ::getsockopt(a.fd, SOL_SOCKET, SO_ERROR, &err, &len);
        if (err == 0) {
          a.connected = true;
        } else {
          settle(a, err == ECONNREFUSED ? PeerState::Refused : PeerState::Unreachable, net::errno_text(err));
        }
        continue;
      }
      char byte = 0;
      const ssize_t n = ::recv(a.fd, &byte, 1, 0);
      if (n == 1) {
        settle(a, PeerState::Answered);
      } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
        settle(a, PeerState::Refused, n == 0 ? "closed without answering" : net::errno_text(errno));
      }
    }
  }
  std::vector<PeerReport> out;
  for (Attempt& a : attempts) {
    if (!a.done) settle(a, PeerState::NoAnswer);
    if (a.fd >= 0) ::close(a.fd);
    out.push_back(a.report);
  }
  return out;
}

std::string describe_lost_peers(const std::vector<PeerReport>& reports, std::chrono::milliseconds deadline) {
  std::map<PeerState, std::vector<const PeerReport*>> by_state;
  for (const PeerReport& r : reports) {
    if (r.state != PeerState::Answered) by_state[r.state].push_back(&r);
  }
  std::string out;
  for (const auto& [state, list] : by_state) {
    std::string who;
    for (const PeerReport* r : list) {
      who += fmt::format("{}rank {} on host {} ({})", who.empty() ? "" : ", ", r->peer.rank, r->peer.host,
                         r->peer.address);
    }
    if (!out.empty()) out += "; ";
    switch (state) {
      case PeerState::NoAnswer:
        out +=
            fmt::format("no answer within {} ms from {}: stopped or hung, or the link to that host is down",
                        deadline.count(), who);
        break;
      case PeerState::Refused:
        out += fmt::format("{}: its host answers but the process is gone ({})", who, list.front()->detail);
        break;
      case PeerState::Unreachable:
        out += fmt::format("{}: unreachable from this host ({}): the link between the hosts is down", who,
                           list.front()->detail);
        break;
      case PeerState::Answered: break;
    }
  }
  return out;
}

}  // namespace engine::dist
