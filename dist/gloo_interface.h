#pragma once
// Which address gloo binds, the address the other ranks connect to (PyTorch's rules):
//   - by default, the address of this host on the route to the rendezvous store (TcpStore::local_address()):
//     the interface that reaches MASTER_ADDR is the one that reaches the other hosts in a usual cluster;
//   - GLOO_SOCKET_IFNAME=<interface> (PyTorch's variable; of a comma-separated list, the first) overrides it,
//     for hosts whose rendezvous network is not the fast one.
// A wrong choice is an error at once, not a rendezvous that hangs until the timeout: an interface that does
// not exist or has no IPv4 address (the message lists those that do), or an address from which the store
// cannot be reached (a loopback address across hosts, a network the others have no route to) within
// min(timeout, 10 s): the other ranks could not reach this one there either.

#include <chrono>
#include <string>

#include "dist/bootstrap.h"
#include "dist/tcp_store.h"

namespace engine::dist {

// The IPv4 address of `interface`. Throws engine::Error naming `variable`, the interface, and those that
// exist.
std::string interface_ipv4(const std::string& interface, const std::string& variable);

// Connects from `local_address` to the store's endpoint within `timeout`; throws engine::Error saying why
// not, naming `chosen_by` (what picked that address).
void check_reaches_store(const std::string& local_address, const TcpStore& store,
                         const std::string& chosen_by, std::chrono::milliseconds timeout);

// The address gloo binds for this rank, by the rules above (`lookup` reads the environment, as in
// read_dist_env).
std::string gloo_bind_address(const TcpStore& store, std::chrono::milliseconds timeout,
                              const EnvLookup& lookup = {});

}  // namespace engine::dist
