#include "dist/tcp_store.h"

#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <random>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

#include "core/error.h"
#include "dist/c10d_store_protocol.h"
#include "dist/socket_io.h"
#include "dist/tcp_store_server.h"

namespace engine::dist {
namespace {

using net::Clock;

// A request in c10d's framing: the query byte, then values, strings and byte vectors (u64 length first).
class Request {
 public:
  explicit Request(c10d::Query q) { bytes_.push_back(static_cast<std::uint8_t>(q)); }
  template <typename T>
  Request& value(T v) {
    const auto* p = reinterpret_cast<const std::uint8_t*>(&v);
    bytes_.insert(bytes_.end(), p, p + sizeof(T));
    return *this;
  }
  Request& bytes(const char* data, std::size_t n) {
    value<std::uint64_t>(n);
    bytes_.insert(bytes_.end(), data, data + n);
    return *this;
  }
  Request& string(const std::string& s) { return bytes(s.data(), s.size()); }
  const std::vector<std::uint8_t>& data() const { return bytes_; }

 private:
  std::vector<std::uint8_t> bytes_;
};

}  // namespace

TcpStore::TcpStore(const std::string& host, int port, bool is_server, std::chrono::milliseconds timeout,
                   const std::string& key_prefix)
    : host_(host), port_(port), timeout_(timeout), prefix_(key_prefix.empty() ? "" : key_prefix + "/") {
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

  // Retry until the deadline: the server may not be listening yet.
  const auto deadline = Clock::now() + timeout;
  std::string last_error = "no attempt";
  while (fd_ < 0) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    ENGINE_CHECK(fd >= 0, "store: socket() failed: {}", net::errno_text(errno));
    int err = 0;
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&target), sizeof(target)) != 0) {
      err = errno;
      if (err == EINPROGRESS) {
        if (net::poll_until(fd, POLLOUT, deadline)) {
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
    last_error = net::errno_text(err);
    if (Clock::now() + std::chrono::milliseconds(100) >= deadline) {
      ENGINE_FAIL(
          "could not reach the rendezvous store at {}:{} (MASTER_ADDR:MASTER_PORT) within {} ms: {}. Is "
          "MASTER_ADDR an address of the rank-0 host (or of torchrun's agent), is it running, and is the "
          "port open?",
          host, port, timeout.count(), last_error);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  // Blocking from here; every receive is bounded by poll().
  ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) & ~O_NONBLOCK);
  net::set_no_delay(fd_);
  sockaddr_in local{};
  socklen_t len = sizeof(local);
  ::getsockname(fd_, reinterpret_cast<sockaddr*>(&local), &len);
  char text[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &local.sin_addr, text, sizeof(text));
  local_address_ = text;
  handshake();
}

TcpStore::~TcpStore() {
  if (fd_ >= 0) ::close(fd_);
  server_.reset();
}

std::string TcpStore::endpoint() const { return fmt::format("{}:{}", host_, port_); }

// c10d's TCPStore client puts "/" before every key it sends (its keyPrefix_), PrefixStore's joins come
// inside that: a PyTorch worker's "k" under PrefixStore("/worker/attempt_0") is "//worker/attempt_0/k" on the
// wire. Ours are the same, so both kinds of client can share keys on one server.
std::string TcpStore::full_key(const std::string& key) const { return "/" + prefix_ + key; }

// VALIDATE has no answer; PING proves that a TCPStore (ours or PyTorch's, 2.5 or newer) is listening.
void TcpStore::handshake() {
  std::random_device random;
  const std::uint32_t nonce = random();
  std::vector<std::uint8_t> hello = Request(c10d::Query::Validate).value(c10d::kValidationMagic).data();
  const std::vector<std::uint8_t> ping = Request(c10d::Query::Ping).value(nonce).data();
  hello.insert(hello.end(), ping.begin(), ping.end());
  std::uint32_t echoed = ~nonce;
  const bool sent = net::send_all(fd_, hello.data(), hello.size());
  const net::IoResult r =
      sent ? net::recv_all(fd_, &echoed, 4, Clock::now() + timeout_) : net::IoResult::Closed;
  ENGINE_CHECK(r == net::IoResult::Ok && echoed == nonce,
               "{} (MASTER_ADDR:MASTER_PORT) {}, but not as a c10d TCPStore (another service on that port? "
               "torchrun's agent store needs PyTorch 2.5 or newer)",
               endpoint(),
               r == net::IoResult::TimedOut ? "accepted the connection but did not answer" : "answered");
}

[[noreturn]] void TcpStore::lost() const {
  ENGINE_FAIL(
      "rendezvous store {} (MASTER_ADDR:MASTER_PORT): the connection was lost (the store's host "
      "- rank 0 or torchrun's agent - is gone?)",
      endpoint());
}

void TcpStore::send(const std::vector<std::uint8_t>& request) {
  if (!net::send_all(fd_, request.data(), request.size())) lost();
}

void TcpStore::receive(void* data, std::size_t n, std::chrono::milliseconds timeout) {
  const net::IoResult r = net::recv_all(fd_, data, n, Clock::now() + timeout);
  ENGINE_CHECK(r != net::IoResult::TimedOut,
               "rendezvous store {} (MASTER_ADDR:MASTER_PORT): no answer within {} ms. Is MASTER_ADDR the "
               "store's host, and is it running?",
               endpoint(), timeout.count());
  if (r == net::IoResult::Closed) lost();
}

void TcpStore::set(const std::string& key, const std::vector<char>& data) {
  std::lock_guard lock(mutex_);
  send(Request(c10d::Query::Set).string(full_key(key)).bytes(data.data(), data.size()).data());
}

std::vector<char> TcpStore::get(const std::string& key) {
  std::lock_guard lock(mutex_);
  const std::string k = full_key(key);
  wait_full_keys({k}, timeout_);
  send(Request(c10d::Query::Get).string(k).data());
  std::uint64_t n = 0;
  receive(&n, 8, timeout_);
  ENGINE_CHECK(n <= c10d::kMaxValueBytes,
               "rendezvous store {}: key '{}' has a value of {} bytes (corrupt reply?)", endpoint(), k, n);
  std::vector<char> value(n);
  if (n > 0) receive(value.data(), n, timeout_);
  return value;
}

void TcpStore::wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) {
  std::lock_guard lock(mutex_);
  std::vector<std::string> full;
  for (const std::string& k : keys) full.push_back(full_key(k));
  wait_full_keys(full, timeout);
}

// WAIT has no timeout on the wire: after ours, CANCEL_WAIT, and the server's answer says whether the keys
// came in the meantime (STOP_WAITING first) or not.
void TcpStore::wait_full_keys(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  Request request(c10d::Query::Wait);
  request.value<std::uint64_t>(keys.size());
  for (const std::string& k : keys) request.string(k);
  send(request.data());
  c10d::WaitResponse response{};
  const net::IoResult r = net::recv_all(fd_, &response, 1, Clock::now() + timeout);
  if (r == net::IoResult::Closed) lost();
  if (r == net::IoResult::Ok) {
    ENGINE_CHECK(response == c10d::WaitResponse::StopWaiting,
                 "rendezvous store {}: unexpected answer {} to WAIT", endpoint(), static_cast<int>(response));
    return;
  }
  send(Request(c10d::Query::CancelWait).data());
  receive(&response, 1, timeout_);
  if (response == c10d::WaitResponse::StopWaiting) receive(&response, 1, timeout_);
  ENGINE_CHECK(response == c10d::WaitResponse::WaitCanceled,
               "rendezvous store {}: unexpected answer {} to CANCEL_WAIT", endpoint(),
               static_cast<int>(response));
  ENGINE_FAIL(
      "rendezvous store {}: {} key(s) starting with '{}' not set within {} ms (a rank did not start or died "
      "during start-up?)",
      endpoint(), keys.size(), keys.empty() ? "" : keys[0], timeout.count());
}

std::int64_t TcpStore::add(const std::string& key, std::int64_t delta) {
  std::lock_guard lock(mutex_);
  send(Request(c10d::Query::Add).string(full_key(key)).value(delta).data());
  std::int64_t value = 0;
  receive(&value, 8, timeout_);
  return value;
}

bool TcpStore::check(const std::vector<std::string>& keys) {
  std::lock_guard lock(mutex_);
  Request request(c10d::Query::Check);
  request.value<std::uint64_t>(keys.size());
  for (const std::string& k : keys) request.string(full_key(k));
  send(request.data());
  c10d::CheckResponse response{};
  receive(&response, 1, timeout_);
  return response == c10d::CheckResponse::Ready;
}

int find_free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ENGINE_CHECK(fd >= 0, "socket() failed: {}", net::errno_text(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  const int err = errno;
  ::close(fd);
  ENGINE_CHECK(ok, "could not find a free TCP port: {}", net::errno_text(err));
  return ntohs(addr.sin_port);
}

}  // namespace engine::dist
