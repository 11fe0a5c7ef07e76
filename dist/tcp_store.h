#pragma once
// TcpStore: the rendezvous key-value store at MASTER_ADDR:MASTER_PORT (torchrun's TCPStore, reduced to what
// gloo's connectFullMesh and the NCCL unique-id exchange need: set, get, wait).
//
// Rank 0 owns the server: it binds MASTER_PORT on every interface and answers the clients from one thread
// per connection. Every rank, rank 0 included, is a client connected to MASTER_ADDR:MASTER_PORT, so a wrong
// MASTER_ADDR is noticed on every rank. Nothing waits forever:
//   - the port already in use on rank 0: an engine::Error at once, naming the port;
//   - the server not reachable (a wrong or unreachable MASTER_ADDR, no rank 0): clients retry refused
//     connections until the timeout, then throw an engine::Error naming the address and the last error;
//   - get/wait of a key nobody sets: an engine::Error after the timeout, naming the key.
// A rank that needs a network address for its own transport takes local_address(): the address of this
// host on the route to the store.
//
// Wire format (the host's byte order: client and server are the same program): one request byte
// ('S' set, 'G' get, 'W' wait), strings as a u32 length and the bytes, timeouts as u64 milliseconds; replies
// start with a status byte (1 ok, 0 timed out).

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gloo/rendezvous/store.h>

namespace engine::dist {

class TcpStoreServer;

class TcpStore final : public gloo::rendezvous::Store {
 public:
  // `is_server`: this process (rank 0) also runs the server on `port`. Throws engine::Error when the port is
  // in use or the server cannot be reached within `timeout`.
  TcpStore(const std::string& host, int port, bool is_server, std::chrono::milliseconds timeout);
  ~TcpStore() override;

  void set(const std::string& key, const std::vector<char>& data) override;
  std::vector<char> get(const std::string& key) override;  // waits for the key, up to the timeout
  void wait(const std::vector<std::string>& keys) override { wait(keys, timeout_); }
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override;

  // The IP address of this host on the connection to the store ("127.0.0.1" over loopback).
  const std::string& local_address() const { return local_address_; }
  std::string endpoint() const;  // "host:port"

 private:
  void send_all(const void* data, std::size_t n);
  void recv_all(void* data, std::size_t n, std::chrono::milliseconds timeout);
  void send_string(const std::string& s);

  std::string host_;
  int port_;
  std::chrono::milliseconds timeout_;
  std::unique_ptr<TcpStoreServer> server_;
  int fd_ = -1;
  std::mutex mutex_;  // one request at a time on the connection
  std::string local_address_;
};

// Binds 127.0.0.1:0 and returns the port the kernel chose (closed again: another process may take it before
// it is used, which the launcher accepts; a clash is reported as "port in use").
int find_free_port();

}  // namespace engine::dist
