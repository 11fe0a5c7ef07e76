#include "dist/tcp_store_server.h"

#include <algorithm>
#include <arpa/inet.h>
#include <cerrno>
#include <fcntl.h>
#include <map>
#include <netinet/in.h>
#include <poll.h>
#include <string>
#include <sys/socket.h>
#include <unistd.h>
#include <vector>

#include "core/error.h"
#include "dist/c10d_store_protocol.h"
#include "dist/socket_io.h"

namespace engine::dist {
namespace {

constexpr std::chrono::seconds kRequestTimeout{10};  // the rest of a request, once its first byte came

}  // namespace

class TcpStoreServer::State {
 public:
  struct Client {
    int fd;
    bool validated = false;
    std::size_t keys_awaited = 0;  // > 0 while a WAIT is pending
  };

  std::vector<Client> clients;

  // Serves one request from `c`; false drops the connection (closed, stalled, malformed, or not c10d).
  bool handle(Client& c) {
    deadline_ = net::Clock::now() + kRequestTimeout;
    std::uint8_t query = 0;
    if (!read(c.fd, &query, 1)) return false;
    const auto q = static_cast<c10d::Query>(query);
    if (!c.validated) {  // PyTorch's servers accept nothing before VALIDATE
      std::uint32_t magic = 0;
      if (q != c10d::Query::Validate || !read(c.fd, &magic, 4) || magic != c10d::kValidationMagic)
        return false;
      c.validated = true;
      return true;
    }
    switch (q) {
      case c10d::Query::Set: {
        std::string key, value;
        if (!read_bytes(c.fd, key, c10d::kMaxKeyBytes) || !read_bytes(c.fd, value, c10d::kMaxValueBytes))
          return false;
        data_[key] = std::move(value);
        return wake_waiters(key);
      }
      case c10d::Query::Get: {
        std::string key;
        if (!read_bytes(c.fd, key, c10d::kMaxKeyBytes)) return false;
        const auto it = data_.find(key);
        if (it == data_.end()) return false;  // as PyTorch's server: a GET of a missing key ends the client
        return send_bytes(c.fd, it->second);
      }
      case c10d::Query::Add: {
        std::string key;
        std::int64_t delta = 0;
        if (!read_bytes(c.fd, key, c10d::kMaxKeyBytes) || !read(c.fd, &delta, 8)) return false;
        std::int64_t value = delta;
        if (const auto it = data_.find(key); it != data_.end()) {
          try {
            value += std::stoll(it->second);
          } catch (const std::exception&) {
            return false;  // not a counter
          }
        }
        data_[key] = std::to_string(value);
        return net::send_all(c.fd, &value, 8) && wake_waiters(key);
      }
      case c10d::Query::Check:
      case c10d::Query::Wait: {
        std::vector<std::string> keys;
        if (!read_keys(c.fd, keys)) return false;
        std::size_t missing = 0;
        for (const std::string& k : keys) missing += data_.contains(k) ? 0 : 1;
        if (q == c10d::Query::Check) {
          const auto r = missing == 0 ? c10d::CheckResponse::Ready : c10d::CheckResponse::NotReady;
          return net::send_all(c.fd, &r, 1);
        }
        if (missing == 0) return send_stop_waiting(c.fd);
        for (const std::string& k : keys)
          if (!data_.contains(k)) waiters_[k].push_back(c.fd);
        c.keys_awaited = missing;
        return true;
      }
      case c10d::Query::CancelWait: {
        forget_waits(c);
        const auto r = c10d::WaitResponse::WaitCanceled;
        return net::send_all(c.fd, &r, 1);
      }
      case c10d::Query::Ping: {
        std::uint32_t nonce = 0;
        return read(c.fd, &nonce, 4) && net::send_all(c.fd, &nonce, 4);
      }
      default: return false;  // a query PyTorch has but rendezvous does not use
    }
  }

  // Removes `c` from every waiter list (a cancelled wait, or a closed connection).
  void forget_waits(Client& c) {
    for (auto& [key, fds] : waiters_) std::erase(fds, c.fd);
    std::erase_if(waiters_, [](const auto& kv) { return kv.second.empty(); });
    c.keys_awaited = 0;
  }

 private:
  bool read(int fd, void* p, std::size_t n) {
    return net::recv_all(fd, p, n, deadline_) == net::IoResult::Ok;
  }

  bool read_bytes(int fd, std::string& s, std::size_t limit) {
    std::uint64_t n = 0;
    if (!read(fd, &n, 8) || n > limit) return false;
    s.resize(n);
    return n == 0 || read(fd, s.data(), n);
  }

  bool read_keys(int fd, std::vector<std::string>& keys) {
    std::uint64_t n = 0;
    if (!read(fd, &n, 8) || n > c10d::kMaxKeysPerQuery) return false;
    keys.resize(n);
    for (std::string& k : keys)
      if (!read_bytes(fd, k, c10d::kMaxKeyBytes)) return false;
    return true;
  }

  static bool send_bytes(int fd, const std::string& s) {
    const std::uint64_t n = s.size();
    return net::send_all(fd, &n, 8) && net::send_all(fd, s.data(), s.size());
  }

  static bool send_stop_waiting(int fd) {
    const auto r = c10d::WaitResponse::StopWaiting;
    return net::send_all(fd, &r, 1);
  }

  // A waiter whose last key just got set is answered. A waiter that cannot be written to is closed later,
  // when poll reports its hang-up; the setter's own request succeeds regardless.
  bool wake_waiters(const std::string& key) {
    const auto it = waiters_.find(key);
    if (it == waiters_.end()) return true;
    const std::vector<int> fds = std::move(it->second);
    waiters_.erase(it);
    for (int fd : fds) {
      const auto client =
          std::find_if(clients.begin(), clients.end(), [fd](const Client& c) { return c.fd == fd; });
      if (client == clients.end() || client->keys_awaited == 0) continue;
      if (--client->keys_awaited == 0) send_stop_waiting(fd);
    }
    return true;
  }

  net::Clock::time_point deadline_;
  std::map<std::string, std::string> data_;
  std::map<std::string, std::vector<int>> waiters_;  // key -> clients waiting for it
};

TcpStoreServer::TcpStoreServer(int port) : port_(port), state_(std::make_unique<State>()) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ENGINE_CHECK(listen_fd_ >= 0, "store: socket() failed: {}", net::errno_text(errno));
  const int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    const int err = errno;
    ::close(listen_fd_);
    ENGINE_FAIL("rank 0 cannot serve the rendezvous store on MASTER_PORT {}: {}{}", port,
                net::errno_text(err),
                err == EADDRINUSE ? " - the port is in use (another job?); choose another MASTER_PORT" : "");
  }
  if (::listen(listen_fd_, 1024) != 0 || ::pipe2(stop_pipe_, O_CLOEXEC) != 0) {
    const int err = errno;
    ::close(listen_fd_);
    ENGINE_FAIL("store: listen on port {} failed: {}", port, net::errno_text(err));
  }
  thread_ = std::thread([this] { serve(); });
}

TcpStoreServer::~TcpStoreServer() {
  const char stop = 1;
  if (::write(stop_pipe_[1], &stop, 1) != 1) {
    // The pipe is ours and empty: a write cannot fail short of a broken process; nothing to do but join.
  }
  thread_.join();
  for (const State::Client& c : state_->clients) ::close(c.fd);
  ::close(listen_fd_);
  ::close(stop_pipe_[0]);
  ::close(stop_pipe_[1]);
}

void TcpStoreServer::serve() {
  std::vector<pollfd> fds;
  for (;;) {
    fds.assign({{stop_pipe_[0], POLLIN, 0}, {listen_fd_, POLLIN, 0}});
    for (const State::Client& c : state_->clients) fds.push_back({c.fd, POLLIN, 0});
    if (::poll(fds.data(), fds.size(), -1) < 0) continue;  // EINTR
    if (fds[0].revents != 0) return;
    // Clients first (their indices match fds[2...]), then new connections.
    std::vector<int> drop;
    for (std::size_t i = 2; i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      State::Client& c = state_->clients[i - 2];
      if (!state_->handle(c)) drop.push_back(c.fd);
    }
    for (int fd : drop) {
      auto it = std::find_if(state_->clients.begin(), state_->clients.end(),
                             [fd](const State::Client& c) { return c.fd == fd; });
      state_->forget_waits(*it);
      ::close(fd);
      state_->clients.erase(it);
    }
    if (fds[1].revents != 0) {
      const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd >= 0) {
        net::set_no_delay(fd);
        state_->clients.push_back({fd});
      }
    }
  }
}

}  // namespace engine::dist
