#pragma once
// PeerProbe: who is lost, when a collective fails. A gloo timeout says only "Timed out waiting 5000ms for
// recv", and a ring all-reduce talks to its neighbours only, so the rank that reports it rarely names the
// rank that is gone. Every rank therefore runs a tiny answering socket (one byte back per connection, from a
// thread of its own) and publishes its rank, host name, address and that port in the rendezvous store; after
// a failure a rank probes every other one at once and says, per rank and host, what it found:
//   answered    the process runs (a thread of it answered);
//   refused     its host answers but the port is closed: the process is gone;
//   no answer   the connection or the byte did not come before the deadline: the process is stopped or
//               hung (a SIGSTOPped process's kernel still accepts, but no thread of it answers), or the
//               link to its host is down;
//   unreachable this host has no route to it (our own link is down).

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <gloo/rendezvous/store.h>

namespace engine::dist {

struct PeerAddress {
  int rank = 0;
  std::string host;     // its host name (gethostname)
  std::string address;  // the IPv4 address it is reached at
  int port = 0;         // its answering socket
};

enum class PeerState { Answered, Refused, NoAnswer, Unreachable };

struct PeerReport {
  PeerAddress peer;
  PeerState state = PeerState::Answered;
  std::string detail;  // the socket error, when there is one
};

class PeerProbe {
 public:
  // Starts the answering socket on `address` (a port the kernel chooses), publishes this rank under
  // "engine_peer/<rank>" in `store`, and reads every rank's entry (each waits up to the store's timeout).
  // Throws engine::Error when the socket cannot be made or an entry is malformed.
  PeerProbe(gloo::rendezvous::Store& store, int rank, int world_size, const std::string& address);
  ~PeerProbe();
  PeerProbe(const PeerProbe&) = delete;
  PeerProbe& operator=(const PeerProbe&) = delete;

  const std::vector<PeerAddress>& peers() const { return peers_; }  // every rank, this one included

  // Probes every other rank in parallel, all within `deadline` from now.
  std::vector<PeerReport> probe(std::chrono::milliseconds deadline) const;

 private:
  void answer_loop();
  void stop();  // ends the answering thread and closes the sockets (idempotent)

  int rank_;
  int listen_fd_ = -1;
  int wake_fds_[2] = {-1, -1};  // a pipe: a byte in it ends answer_loop
  std::vector<PeerAddress> peers_;
  std::thread thread_;
};

// The diagnosis in words: "" when every rank answered, else e.g. "no answer within 2000 ms from rank 2 on
// host h1 (10.0.0.2), rank 3 on host h1 (10.0.0.2): stopped or hung, or the link to that host is down".
std::string describe_lost_peers(const std::vector<PeerReport>& reports, std::chrono::milliseconds deadline);

}  // namespace engine::dist
