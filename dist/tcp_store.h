#pragma once
// TcpStore: a client of the rendezvous key-value store at MASTER_ADDR:MASTER_PORT, speaking c10d's TCPStore
// protocol (dist/c10d_store_protocol.h), so the same client joins
//   - torchrun's agent store (TORCHELASTIC_USE_AGENT_STORE=True: torchrun already serves a TCPStore there,
//     and every rank is a client, its keys under "/worker/attempt_<TORCHELASTIC_RESTART_COUNT>/" as
//     PyTorch's workers do: see dist/bootstrap.h), and
//   - our own store (dist/tcp_store_server.h), which rank 0 serves when no launcher does (`is_server`).
// gloo's connectFullMesh and the NCCL unique-id exchange use it through gloo's Store interface.
//
// Nothing waits forever:
//   - the port already in use on rank 0: an engine::Error at once, naming the port;
//   - the store not reachable (a wrong or unreachable MASTER_ADDR, no rank 0): refused connections are
//     retried until the timeout, then an engine::Error naming the address and the last error;
//   - something else listening there: the handshake (VALIDATE, then a PING whose nonce must come back) fails
//     with a message saying so;
//   - get/wait of a key nobody sets: an engine::Error after the timeout, naming the key (the wait is
//     cancelled on the server with CANCEL_WAIT, so the connection stays usable).
// A rank that needs a network address for its own transport takes local_address(): the address of this
// host on the route to the store.

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <gloo/rendezvous/store.h>

namespace engine::dist {

class TcpStoreServer;

class TcpStore final : public gloo::rendezvous::Store {
 public:
  // `is_server`: this process (rank 0) also serves the store on `port`. `key_prefix` is put before every
  // key this client sets or reads, with a '/' between (PyTorch's PrefixStore); on the wire every key also
  // starts with '/', as c10d's own client sends them. Throws engine::Error when the
  // port is in use or the store cannot be reached within `timeout`.
  TcpStore(const std::string& host, int port, bool is_server, std::chrono::milliseconds timeout,
           const std::string& key_prefix = "");
  ~TcpStore() override;

  void set(const std::string& key, const std::vector<char>& data) override;
  std::vector<char> get(const std::string& key) override;  // waits for the key, up to the timeout
  void wait(const std::vector<std::string>& keys) override { wait(keys, timeout_); }
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override;
  // Adds `delta` to the decimal counter `key` (0 when unset) and returns the new value.
  std::int64_t add(const std::string& key, std::int64_t delta);
  // True when every key is set (does not wait).
  bool check(const std::vector<std::string>& keys);

  // The IP address of this host on the connection to the store ("127.0.0.1" over loopback).
  const std::string& local_address() const { return local_address_; }
  std::string endpoint() const;  // "host:port"
  const std::string& host() const { return host_; }
  int port() const { return port_; }
  const std::string& key_prefix() const { return prefix_; }

 private:
  std::string full_key(const std::string& key) const;
  void handshake();
  void send(const std::vector<std::uint8_t>& request);
  void receive(void* data, std::size_t n, std::chrono::milliseconds timeout);
  void wait_full_keys(const std::vector<std::string>& keys, std::chrono::milliseconds timeout);
  [[noreturn]] void lost() const;

  std::string host_;
  int port_;
  std::chrono::milliseconds timeout_;
  std::string prefix_;  // with its trailing '/', or empty
  std::unique_ptr<TcpStoreServer> server_;
  int fd_ = -1;
  std::mutex mutex_;  // one request at a time on the connection
  std::string local_address_;
};

// Binds 127.0.0.1:0 and returns the port the kernel chose (closed again: another process may take it before
// it is used, which the launcher accepts; a clash is reported as "port in use").
int find_free_port();

}  // namespace engine::dist
