#pragma once
// TcpStoreServer: the rendezvous store rank 0 serves when no launcher serves one (our launcher, mpirun,
// srun, torchrun without an agent store). It speaks the subset of c10d's TCPStore protocol that our client
// and PyTorch's use for rendezvous (dist/c10d_store_protocol.h: VALIDATE, SET, GET, ADD, CHECK, WAIT,
// CANCEL_WAIT, PING), so one client (dist/tcp_store.h) talks to it and to torchrun's agent store alike,
// and PyTorch's torch.distributed.TCPStore can be its client too.
//
// One thread polls the listening socket and every client (as PyTorch's TCPStoreMasterDaemon does). A
// request is read whole once its first byte arrives (bounded: a client that stalls mid-request for 10 s or
// sends a key or value over the protocol's limits is disconnected). A WAIT is answered when its keys are
// all set; the server never blocks on it.

#include <atomic>
#include <memory>
#include <thread>

namespace engine::dist {

class TcpStoreServer {
 public:
  // Binds `port` on every IPv4 interface and starts serving. Throws engine::Error naming the port when it
  // cannot be bound ("in use" when another process has it).
  explicit TcpStoreServer(int port);
  ~TcpStoreServer();  // stops the thread and closes every connection
  TcpStoreServer(const TcpStoreServer&) = delete;
  TcpStoreServer& operator=(const TcpStoreServer&) = delete;

  int port() const { return port_; }

 private:
  class State;  // the key-value map, the waiters and the connections: touched by the serving thread only
  void serve();

  int port_;
  int listen_fd_ = -1;
  int stop_pipe_[2] = {-1, -1};
  std::unique_ptr<State> state_;
  std::thread thread_;
};

}  // namespace engine::dist
