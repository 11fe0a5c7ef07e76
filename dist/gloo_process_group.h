#pragma once
// The gloo backend of ProcessGroup: TCP transport, rendezvous through the TcpStore (dist/tcp_store.h).
//
// One communication thread per group runs the operations in the order they were queued (the CPU analogue of
// an NCCL stream): the Reducer queues bucket all-reduces from the backward hook and overlaps them with the
// rest of backward; collectives queued later from the same thread (SyncBatchNorm's sums, metrics) run after
// them, in the same order on every rank. Each operation gets the next tag, the same on every rank.
//
// CUDA tensors go through host copies on the communication thread (copied on the caller's stream after the
// work queued on it, reduced on the host, copied back; Work::wait returns once the result is on the device),
// so several ranks can share one GPU. Slow, but it runs the multi-rank path where NCCL cannot.
//
// Every gloo operation has the group's timeout; a dead peer surfaces as a connection error at once, a
// stalled one at the timeout. Either is an engine::Error naming this rank and the collective, and the group
// refuses further work.

#include <chrono>
#include <memory>

#include "dist/process_group.h"
#include "dist/tcp_store.h"

namespace engine::dist {

// Connects the full mesh of `world_size` ranks through `store` (kept alive by the group: rank 0 serves it).
// `local_address` is the address other ranks reach this one at (TcpStore::local_address()). Throws
// engine::Error when the mesh is not complete within `timeout`.
std::unique_ptr<ProcessGroup> make_gloo_process_group(std::shared_ptr<TcpStore> store, int rank,
                                                      int world_size, std::chrono::milliseconds timeout,
                                                      const std::string& local_address);

}  // namespace engine::dist
