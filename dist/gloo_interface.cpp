#include "dist/gloo_interface.h"

#include <algorithm>
#include <arpa/inet.h>
#include <cerrno>
#include <cstdlib>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>

#include "core/error.h"
#include "dist/socket_io.h"

namespace engine::dist {

std::string interface_ipv4(const std::string& interface, const std::string& variable) {
  ifaddrs* list = nullptr;
  ENGINE_CHECK(::getifaddrs(&list) == 0, "{}={}: cannot list the network interfaces: {}", variable, interface,
               net::errno_text(errno));
  std::string found, known;
  for (const ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET) continue;
    char text[INET_ADDRSTRLEN] = {};
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(i->ifa_addr)->sin_addr, text, sizeof text);
    if (found.empty() && interface == i->ifa_name) found = text;
    known += fmt::format("{}{} ({})", known.empty() ? "" : ", ", i->ifa_name, text);
  }
  ::freeifaddrs(list);
  ENGINE_CHECK(!found.empty(),
               "{}={}: this host has no interface of that name with an IPv4 address; it has {}", variable,
               interface, known.empty() ? "none" : known);
  return found;
}

void check_reaches_store(const std::string& local_address, const TcpStore& store,
                         const std::string& chosen_by, std::chrono::milliseconds timeout) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  ENGINE_CHECK(
      ::getaddrinfo(store.host().c_str(), std::to_string(store.port()).c_str(), &hints, &found) == 0 &&
          found != nullptr,
      "{}: the store's host '{}' does not resolve", chosen_by, store.host());
  const sockaddr_in target = *reinterpret_cast<const sockaddr_in*>(found->ai_addr);
  ::freeaddrinfo(found);

  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  ENGINE_CHECK(fd >= 0, "{}: socket() failed: {}", chosen_by, net::errno_text(errno));
  sockaddr_in local{};
  local.sin_family = AF_INET;
  ::inet_pton(AF_INET, local_address.c_str(), &local.sin_addr);
  int err = 0;
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&local), sizeof local) != 0) {
    err = errno;
  } else if (::connect(fd, reinterpret_cast<const sockaddr*>(&target), sizeof target) != 0) {
    err = errno;
    if (err == EINPROGRESS) {
      if (net::poll_until(fd, POLLOUT, net::Clock::now() + timeout)) {
        socklen_t len = sizeof err;
        ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
      } else {
        err = ETIMEDOUT;
      }
    }
  }
  ::close(fd);
  ENGINE_CHECK(
      err == 0,
      "{} gives gloo the address {}, from which the rendezvous store at {} cannot be reached ({} within "
      "{} ms): the ranks on other hosts could not reach this rank there either. Name the interface "
      "that reaches the other hosts, or unset it to use the address on the route to the store",
      chosen_by, local_address, store.endpoint(), net::errno_text(err), timeout.count());
}

std::string gloo_bind_address(const TcpStore& store, std::chrono::milliseconds timeout,
                              const EnvLookup& lookup) {
  const char* value = lookup ? lookup("GLOO_SOCKET_IFNAME") : std::getenv("GLOO_SOCKET_IFNAME");
  if (value == nullptr || *value == '\0') return store.local_address();
  std::string interface = value;
  interface = interface.substr(0, interface.find(','));
  const std::string chosen_by = fmt::format("GLOO_SOCKET_IFNAME={}", value);
  std::string address = interface_ipv4(interface, "GLOO_SOCKET_IFNAME");
  check_reaches_store(address, store, chosen_by + " (" + interface + ")",
                      std::min(timeout, std::chrono::milliseconds(10000)));
  return address;
}

}  // namespace engine::dist
