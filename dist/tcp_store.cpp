#include "dist/tcp_store.h"

#include <arpa/inet.h>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <fcntl.h>
#include <list>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/error.h"

namespace engine::dist {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::chrono::milliseconds kPollSlice{200};  // how often blocked server threads look at `stop`
constexpr char kMagic[8] = {'E', 'N', 'G', 'S', 'T', 'O', 'R', '1'};  // the handshake reply

std::string errno_text(int err) { return fmt::format("{} ({})", std::strerror(err), err); }

// Waits until `fd` is ready for `events` or `deadline` passes; false on timeout.
bool poll_until(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, events, 0};
    const int r = ::poll(&p, 1, static_cast<int>(std::min<std::int64_t>(left.count(), 1000)));
    if (r > 0) return true;
    ENGINE_CHECK(r == 0 || errno == EINTR, "store: poll failed: {}", errno_text(errno));
  }
}

// Blocking helpers for the server side, which polls in slices so that it can stop.
bool server_recv(int fd, void* data, std::size_t n, const std::atomic<bool>& stop) {
  auto* p = static_cast<char*>(data);
  while (n > 0) {
    pollfd pfd{fd, POLLIN, 0};
    const int r = ::poll(&pfd, 1, static_cast<int>(kPollSlice.count()));
    if (stop) return false;
    if (r <= 0) continue;
    const ssize_t got = ::recv(fd, p, n, 0);
    if (got <= 0) return false;  // closed or reset: the client is gone
    p += got;
    n -= static_cast<std::size_t>(got);
  }
  return true;
}

bool server_send(int fd, const void* data, std::size_t n) {
  const auto* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t sent = ::send(fd, p, n, MSG_NOSIGNAL);
    if (sent <= 0) return false;
    p += sent;
    n -= static_cast<std::size_t>(sent);
  }
  return true;
}

}  // namespace

// The server: a map, a condition variable for waiters, one thread accepting and one per client.
class TcpStoreServer {
 public:
  explicit TcpStoreServer(int port) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ENGINE_CHECK(listen_fd_ >= 0, "store: socket() failed: {}", errno_text(errno));
    const int one = 1;
    ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_ANY);
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      const int err = errno;
      ::close(listen_fd_);
      ENGINE_FAIL(
          "rank 0 cannot serve the rendezvous store on MASTER_PORT {}: {}{}", port, errno_text(err),
          err == EADDRINUSE ? " - the port is in use (another job?); choose another MASTER_PORT" : "");
    }
    ENGINE_CHECK(::listen(listen_fd_, 128) == 0, "store: listen on port {} failed: {}", port,
                 errno_text(errno));
    accept_thread_ = std::thread([this] { accept_loop(); });
  }

  ~TcpStoreServer() {
    stop_ = true;
    cv_.notify_all();
    if (accept_thread_.joinable()) accept_thread_.join();
    for (std::thread& t : client_threads_) t.join();
    for (int fd : client_fds_) ::close(fd);
    ::close(listen_fd_);
  }

 private:
  void accept_loop() {
    while (!stop_) {
      pollfd p{listen_fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(kPollSlice.count())) <= 0) continue;
      const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      const int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      client_fds_.push_back(fd);
      client_threads_.emplace_back([this, fd] { serve(fd); });
    }
  }

  bool read_string(int fd, std::string& s) {
    std::uint32_t n = 0;
    if (!server_recv(fd, &n, sizeof(n), stop_)) return false;
    s.resize(n);
    return n == 0 || server_recv(fd, s.data(), n, stop_);
  }

  // Waits until every key is present or the timeout passes (or the server stops).
  bool wait_keys(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, timeout, [&] {
      if (stop_) return true;
      for (const std::string& k : keys)
        if (!data_.contains(k)) return false;
      return true;
    }) && !stop_;
  }

  void serve(int fd) {
    for (;;) {
      char op = 0;
      if (!server_recv(fd, &op, 1, stop_)) return;
      if (op == 'H') {  // handshake: prove this is our store
        if (!server_send(fd, kMagic, sizeof(kMagic))) return;
      } else if (op == 'S') {
        std::string key, value;
        if (!read_string(fd, key) || !read_string(fd, value)) return;
        {
          std::lock_guard lock(mutex_);
          data_[key] = std::move(value);
        }
        cv_.notify_all();
        const char ok = 1;
        if (!server_send(fd, &ok, 1)) return;
      } else if (op == 'G' || op == 'W') {
        std::uint32_t count = 1;
        if (op == 'W' && !server_recv(fd, &count, sizeof(count), stop_)) return;
        std::vector<std::string> keys(count);
        for (std::string& k : keys)
          if (!read_string(fd, k)) return;
        std::uint64_t timeout_ms = 0;
        if (!server_recv(fd, &timeout_ms, sizeof(timeout_ms), stop_)) return;
        const char ok = wait_keys(keys, std::chrono::milliseconds(timeout_ms)) ? 1 : 0;
        if (!server_send(fd, &ok, 1)) return;
        if (op == 'G' && ok) {
          std::string value;
          {
            std::lock_guard lock(mutex_);
            value = data_[keys[0]];
          }
          const auto n = static_cast<std::uint32_t>(value.size());
          if (!server_send(fd, &n, sizeof(n)) || !server_send(fd, value.data(), n)) return;
        }
      } else {
        return;  // not our protocol: drop the connection
      }
    }
  }

  int listen_fd_ = -1;
  std::atomic<bool> stop_{false};
  std::thread accept_thread_;
  std::list<std::thread> client_threads_;  // touched by the accept thread only, until the destructor
  std::vector<int> client_fds_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::map<std::string, std::string> data_;
};

TcpStore::TcpStore(const std::string& host, int port, bool is_server, std::chrono::milliseconds timeout)
    : host_(host), port_(port), timeout_(timeout) {
  ENGINE_CHECK(port > 0 && port < 65536, "MASTER_PORT {} is not a TCP port (1..65535)", port);
  if (is_server) server_ = std::make_unique<TcpStoreServer>(port);

  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int gai = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
  ENGINE_CHECK(gai == 0 && found != nullptr, "MASTER_ADDR '{}' does not resolve to an IPv4 address: {}", host,
               ::gai_strerror(gai));
  const sockaddr_in target = *reinterpret_cast<const sockaddr_in*>(found->ai_addr);
  ::freeaddrinfo(found);

  // Retry until the deadline: rank 0 may not be listening yet.
  const auto deadline = Clock::now() + timeout;
  std::string last_error = "no attempt";
  while (fd_ < 0) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    ENGINE_CHECK(fd >= 0, "store: socket() failed: {}", errno_text(errno));
    int err = 0;
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&target), sizeof(target)) != 0) {
      err = errno;
      if (err == EINPROGRESS) {
        if (poll_until(fd, POLLOUT, deadline)) {
          socklen_t len = sizeof(err);
          ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
        } else {
          err = ETIMEDOUT;
        }
      }
    }
    if (err == 0) {
      fd_ = fd;
      break;
    }
    ::close(fd);
    last_error = errno_text(err);
    if (Clock::now() + std::chrono::milliseconds(100) >= deadline) {
      ENGINE_FAIL(
          "could not reach the rendezvous store at {}:{} (MASTER_ADDR:MASTER_PORT) within {} ms: {}. Is "
          "MASTER_ADDR an address of the rank-0 host, is rank 0 running, and is the port open?",
          host, port, timeout.count(), last_error);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  // Blocking from here; every receive is bounded by poll().
  ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) & ~O_NONBLOCK);
  const int one = 1;
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  sockaddr_in local{};
  socklen_t len = sizeof(local);
  ::getsockname(fd_, reinterpret_cast<sockaddr*>(&local), &len);
  char text[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &local.sin_addr, text, sizeof(text));
  local_address_ = text;

  // Handshake: something else listening there (or a proxy accepting any connection) is refused here.
  const char op = 'H';
  send_all(&op, 1);
  char magic[sizeof(kMagic)] = {};
  recv_all(magic, sizeof(magic), timeout);
  ENGINE_CHECK(
      std::memcmp(magic, kMagic, sizeof(kMagic)) == 0,
      "{}:{} (MASTER_ADDR:MASTER_PORT) answered, but not as this program's rendezvous store (another "
      "service on that port?)",
      host, port);
}

TcpStore::~TcpStore() {
  if (fd_ >= 0) ::close(fd_);
  server_.reset();
}

std::string TcpStore::endpoint() const { return fmt::format("{}:{}", host_, port_); }

void TcpStore::send_all(const void* data, std::size_t n) {
  ENGINE_CHECK(server_send(fd_, data, n),
               "rendezvous store {} (MASTER_ADDR:MASTER_PORT): the connection was lost (rank 0 gone, or not "
               "our store?)",
               endpoint());
}

void TcpStore::recv_all(void* data, std::size_t n, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  auto* p = static_cast<char*>(data);
  while (n > 0) {
    ENGINE_CHECK(poll_until(fd_, POLLIN, deadline),
                 "rendezvous store {} (MASTER_ADDR:MASTER_PORT): no answer within {} ms. Is MASTER_ADDR the "
                 "rank-0 host, and is rank 0 running?",
                 endpoint(), timeout.count());
    const ssize_t got = ::recv(fd_, p, n, 0);
    ENGINE_CHECK(got > 0,
                 "rendezvous store {} (MASTER_ADDR:MASTER_PORT): the connection was lost (rank 0 gone, or "
                 "not our store?)",
                 endpoint());
    p += got;
    n -= static_cast<std::size_t>(got);
  }
}

void TcpStore::send_string(const std::string& s) {
  const auto n = static_cast<std::uint32_t>(s.size());
  send_all(&n, sizeof(n));
  send_all(s.data(), n);
}

void TcpStore::set(const std::string& key, const std::vector<char>& data) {
  std::lock_guard lock(mutex_);
  const char op = 'S';
  send_all(&op, 1);
  send_string(key);
  send_string(std::string(data.begin(), data.end()));
  char ok = 0;
  recv_all(&ok, 1, timeout_);
}

std::vector<char> TcpStore::get(const std::string& key) {
  std::lock_guard lock(mutex_);
  const char op = 'G';
  send_all(&op, 1);
  send_string(key);
  const auto timeout_ms = static_cast<std::uint64_t>(timeout_.count());
  send_all(&timeout_ms, sizeof(timeout_ms));
  char ok = 0;
  recv_all(&ok, 1, timeout_ + std::chrono::seconds(5));
  ENGINE_CHECK(ok == 1,
               "rendezvous store {}: key '{}' was not set within {} ms (a rank did not start or "
               "died during start-up?)",
               endpoint(), key, timeout_.count());
  std::uint32_t n = 0;
  recv_all(&n, sizeof(n), timeout_);
  std::vector<char> value(n);
  if (n > 0) recv_all(value.data(), n, timeout_);
  return value;
}

void TcpStore::wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) {
  std::lock_guard lock(mutex_);
  const char op = 'W';
  send_all(&op, 1);
  const auto count = static_cast<std::uint32_t>(keys.size());
  send_all(&count, sizeof(count));
  for (const std::string& k : keys) send_string(k);
  const auto timeout_ms = static_cast<std::uint64_t>(timeout.count());
  send_all(&timeout_ms, sizeof(timeout_ms));
  char ok = 0;
  recv_all(&ok, 1, timeout + std::chrono::seconds(5));
  ENGINE_CHECK(ok == 1,
               "rendezvous store {}: {} key(s) starting with '{}' not set within {} ms (a rank did "
               "not start or died during start-up?)",
               endpoint(), keys.size(), keys.empty() ? "" : keys[0], timeout.count());
}

int find_free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ENGINE_CHECK(fd >= 0, "socket() failed: {}", errno_text(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  const int err = errno;
  ::close(fd);
  ENGINE_CHECK(ok, "could not find a free TCP port: {}", errno_text(err));
  return ntohs(addr.sin_port);
}

}  // namespace engine::dist
