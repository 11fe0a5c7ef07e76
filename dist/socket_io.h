#pragma once
// Blocking socket I/O with deadlines, for the rendezvous store's client and server (dist/tcp_store.h,
// dist/tcp_store_server.h). Nothing here throws: callers turn a false into a message that names the store.

#include <chrono>
#include <cstddef>
#include <string>

namespace engine::dist::net {

using Clock = std::chrono::steady_clock;

enum class IoResult { Ok, TimedOut, Closed };

// "Connection refused (111)".
std::string errno_text(int err);

// Waits until `fd` is ready for `events` (POLLIN, POLLOUT) or `deadline` passes; false on timeout.
bool poll_until(int fd, short events, Clock::time_point deadline);

// Sends all `n` bytes (MSG_NOSIGNAL: a closed peer is an error, not SIGPIPE); false when the peer is gone.
bool send_all(int fd, const void* data, std::size_t n);

// Receives exactly `n` bytes before `deadline`.
IoResult recv_all(int fd, void* data, std::size_t n, Clock::time_point deadline);

// Sets TCP_NODELAY (requests are small and answered one at a time).
void set_no_delay(int fd);

}  // namespace engine::dist::net
