#pragma once
// The NCCL backend of ProcessGroup (CUDA builds only): CUDA tensors, work queued on the stream passed in.
//
//   - Rank 0 makes the unique id (ncclGetUniqueId) and publishes it in the rendezvous store; the others read
//     it there. The communicator is created non-blocking and its initialization polled, so a rank that never
//     joins ends in an error after the timeout instead of a hang.
//   - Every collective sits inside ncclGroupStart/ncclGroupEnd (so ncclAvg, and any later fusion of several
//     buckets, go through one launch) and every NCCL call is checked with NCCL_CHECK.
//   - synchronize(stream) polls the stream's completion and ncclCommGetAsyncError; an async error or the
//     timeout aborts the communicator (ncclCommAbort) and throws engine::Error naming the rank and the last
//     collective queued.
//   - A watchdog thread watches every queued collective (an event recorded after it): one not done within
//     the timeout, or an async error, makes it abort the communicator, print the rank, the collective and
//     the cause, and end the process (status 1), so a dead or stalled peer never leaves this rank blocked in
//     a kernel launch or a synchronization that nothing polls.
// Only float32, float64 and bfloat16 reduce; broadcast and all-gather move bytes of any dtype.

#include <chrono>
#include <memory>

#include "dist/process_group.h"
#include "dist/tcp_store.h"

namespace engine::dist {

std::unique_ptr<ProcessGroup> make_nccl_process_group(std::shared_ptr<TcpStore> store, int rank,
                                                      int world_size, std::chrono::milliseconds timeout,
                                                      int cuda_device);

}  // namespace engine::dist
