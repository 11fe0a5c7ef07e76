#pragma once
// ProcessGroup: the collectives DDP needs (all-reduce sum/avg, broadcast, all-gather, barrier) among the
// ranks of one job, behind one interface with two backends:
//
//   NcclProcessGroup  (dist/nccl_process_group.h, CUDA builds)  CUDA tensors; the work is queued on the
//                     stream passed in, so ordering against compute is done with events, never a host sync.
//   GlooProcessGroup  (dist/gloo_process_group.h)               CPU tensors, and CUDA tensors through host
//                     copies (so two ranks may share one GPU); the work runs on one communication thread.
//
// Ordering. Every call is a collective: every rank must make the same calls in the same order. The async
// calls return at once; the operation runs in call order after everything queued before it (NCCL: in stream
// order; gloo: on the group's single communication thread, FIFO). A tensor passed to an async call must stay
// alive and untouched until its Work is waited on (or, for NCCL, until the stream has passed it).
//
// Failure. No operation waits forever: each has the group's timeout. A failure (a peer died, a timeout, an
// NCCL async error) throws engine::Error naming this rank, the collective and the cause; after a failure the
// group is unusable (NCCL: the communicator is aborted) and the process should exit non-zero.

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/tensor.h"

namespace engine::dist {

enum class ReduceOp { Sum, Avg };

// The exit status of a process that fails because its process group failed (ProcessGroup::failed()).
inline constexpr int kPeerFailureExitStatus = 3;

std::string_view reduce_op_name(ReduceOp op);

// The handle of an async operation.
class Work {
 public:
  virtual ~Work() = default;
  // Blocks the host until the operation is done (gloo), or (NCCL) returns at once: the work is ordered on
  // the stream it was queued on, and failures surface in ProcessGroup::synchronize. Throws engine::Error
  // when the operation failed.
  virtual void wait() = 0;

  // When the operation ran, for a backend that runs it on a host thread (gloo: its communication thread,
  // the host copies of CUDA tensors included), as steady_clock readings; read after wait() returned.
  // nullopt where the work is ordered on a stream (NCCL: time it with events on that stream) or is no work
  // at all (a world of one). The Reducer's timeline reads it (dist/reducer.h).
  struct HostSpan {
    std::chrono::steady_clock::time_point start, end;
  };
  virtual std::optional<HostSpan> host_span() const { return std::nullopt; }
};

// Which implementation carries the collectives. NCCL queues them on the caller's CUDA stream
// (stream-ordered); gloo runs them on its own thread (CUDA tensors through host copies); Single is a world of
// one.
enum class Backend { Nccl, Gloo, Single };

std::string_view backend_name(Backend b);

class ProcessGroup {
 public:
  virtual ~ProcessGroup() = default;
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  int rank() const { return rank_; }
  int world_size() const { return world_size_; }
  std::chrono::milliseconds timeout() const { return timeout_; }
  virtual Backend backend_kind() const = 0;
  std::string_view backend() const { return backend_name(backend_kind()); }  // "nccl", "gloo" or "single"

  // In place: every rank's `tensor` becomes the elementwise sum (or mean) over ranks. F32, F64 and BF16
  // (BF16 is summed in float and rounded once per step of the reduction).
  virtual std::unique_ptr<Work> all_reduce_async(const Tensor& tensor, ReduceOp op, void* stream) = 0;
  // In place: every rank's `tensor` becomes root's. Any dtype.
  virtual std::unique_ptr<Work> broadcast_async(const Tensor& tensor, int root, void* stream) = 0;
  // `output` (world_size * input.numel() elements, same dtype) receives every rank's `input`, rank 0 first.
  virtual std::unique_ptr<Work> all_gather_async(const Tensor& input, const Tensor& output, void* stream) = 0;

  // The blocking forms: queue, then wait on the host (NCCL: synchronize(stream) too).
  void all_reduce(const Tensor& tensor, ReduceOp op, void* stream = nullptr);
  void broadcast(const Tensor& tensor, int root, void* stream = nullptr);
  void all_gather(const Tensor& input, const Tensor& output, void* stream = nullptr);
  // Returns when every rank has reached the barrier (or throws after the timeout).
  virtual void barrier() = 0;

  // True once an operation of this group failed (a peer died or stalled, a connection broke): the group is
  // unusable, and the error this process is failing with most likely began on another rank. cnn_train then
  // exits with kPeerFailureExitStatus so that a launcher names the rank where it began.
  virtual bool failed() const { return false; }

  // Blocks the host until all the work this group queued (on `stream`, for NCCL) is done, or throws after
  // the timeout. The NCCL backend polls ncclCommGetAsyncError meanwhile and aborts the communicator on an
  // error or the timeout. A training loop calls it where it reads results on the host anyway (a log line,
  // the end of an epoch), so a dead peer is noticed within one interval.
  virtual void synchronize(void* stream) = 0;

 protected:
  ProcessGroup(int rank, int world_size, std::chrono::milliseconds timeout);

  // "rank 1 of 3 (gloo): all_reduce of float32[1024] failed: <why>"
  std::string describe_failure(std::string_view collective, const std::string& why) const;

 private:
  int rank_;
  int world_size_;
  std::chrono::milliseconds timeout_;
};

}  // namespace engine::dist
