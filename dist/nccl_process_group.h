#pragma once
// The NCCL backend of ProcessGroup (CUDA builds only): CUDA tensors, work queued on the stream passed in.
//
//   - Rank 0 makes the unique id (ncclGetUniqueId) and publishes it in the rendezvous store; the others read
//     it there. The communicator is blocking (PyTorch's default): a collective is on its stream when the
//     call returns, with no polling on the host; a creation or group end that still answers ncclInProgress
//     (a non-blocking communicator) is polled under the timeout, never rejected.
//   - Every collective sits inside ncclGroupStart/ncclGroupEnd (so ncclAvg, and any later fusion of several
//     buckets, go through one launch); every NCCL call is checked, its error carrying file, line, the call
//     and NCCL's message.
//   - The life of the communicator is dist/comm_supervisor.h's policy: one mutex around every NCCL call on
//     it, one abort at most; synchronize(stream) polls the stream and ncclCommGetAsyncError under the
//     timeout (an error or the timeout aborts and throws engine::Error naming the rank and the collective);
//     a watchdog thread watches an event after every collective and the blocking calls (creation, launch,
//     abort, destroy) and, past the timeout or on an async error, names the rank, the collective and the
//     cause and ends the process with kPeerFailureExitStatus (3); the destructor destroys the communicator
//     after a clean finish and aborts it on an error path (ncclCommDestroy would wait for kernels a dead peer
//     never finishes).
// Only float32, float64 and bfloat16 reduce; broadcast and all-gather move bytes of any dtype.

#include <chrono>
#include <memory>

#include <nccl.h>

#include "dist/process_group.h"
#include "dist/tcp_store.h"

namespace engine::dist {

std::unique_ptr<ProcessGroup> make_nccl_process_group(std::shared_ptr<TcpStore> store, int rank,
                                                      int world_size, std::chrono::milliseconds timeout,
                                                      int cuda_device);

// The communicator's configuration: blocking set explicitly (NCCL_COMM_BLOCKING=0 in the environment would
// otherwise make every call return ncclInProgress and every launch go through NCCL's thread).
ncclConfig_t nccl_comm_config();

}  // namespace engine::dist
