#pragma once
// CommSupervisor: the life of a communicator whose work runs on streams (NCCL's), as a policy that knows
// neither NCCL nor CUDA, so that CPU tests can drive it with fakes (tests/cpu/comm_supervisor_test.cpp).
//
//   create     runs the creation call under the watchdog's deadline, then settles its status: a creation
//              still InProgress (a non-blocking communicator) is polled under the timeout, never rejected.
//   collective runs the calls that queue one collective with the communicator locked, settles the status of
//              the group's end the same way, then records a Marker after it on the stream for the watchdog.
//   synchronize waits for a Marker on the stream, polling the communicator's async error, under the timeout.
//   shutdown   destroys the communicator only after a clean finish (no failure, no uncaught exception, all
//              queued work done); otherwise aborts it. Both under the watchdog's deadline.
//
// Failure. The first failure aborts the communicator exactly once (a compare-and-swap on `failed`, and every
// call into the communicator holds one mutex, so an abort never runs beside another call: no use after free).
// On the main thread a failure throws engine::Error naming the rank, the collective and the cause.
//
// The watchdog thread watches the markers of queued collectives and the main thread's blocking calls
// (creation, queueing, abort, destroy). Work not done within the timeout, an async error or a failed marker
// makes it print the rank, the collective and the cause and end the process with kPeerFailureExitStatus (3):
// a dead peer leaves an NCCL kernel spinning, and this process blocked where nothing polls. Before exiting it
// aborts the communicator if it can take the mutex within a grace period and the abort returns within it
// (ncclCommAbort itself can hang, NVIDIA/nccl#829: PyTorch's TORCH_NCCL_ASYNC_ERROR_HANDLING=3 skips it).

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace engine::dist {

// What a communicator, a creation call or a marker reports, without the library's types.
struct CommStatus {
  enum class State { Ready, InProgress, Failed };
  State state = State::Ready;
  std::string error;  // Failed: the library's message

  static CommStatus ready() { return {}; }
  static CommStatus in_progress() { return {State::InProgress, {}}; }
  static CommStatus failed(std::string why) { return {State::Failed, std::move(why)}; }
};

// The communicator as the supervisor drives it; never called by two threads at once.
class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual CommStatus async_status() = 0;  // ncclCommGetAsyncError
  virtual void abort() = 0;               // ncclCommAbort: ends the queued work and frees the communicator
  virtual void destroy() = 0;             // ncclCommDestroy: waits for the queued work, then frees
};

// A point in the work queued on a stream (a CUDA event): Ready once everything queued before it is done.
class Marker {
 public:
  virtual ~Marker() = default;
  virtual void record(void* stream) = 0;
  virtual CommStatus query() = 0;  // Ready, InProgress (not yet), or Failed; never throws
};

struct CommSupervisorOptions {
  std::chrono::milliseconds timeout{600000};
  std::chrono::microseconds poll_interval{200};   // the main thread's polling step
  std::chrono::milliseconds watch_interval{100};  // the watchdog's
  std::chrono::milliseconds abort_grace{5000};    // how long the watchdog waits for the mutex and the abort
  // "rank 1 of 2 (nccl): <what> failed: <why>" (ProcessGroup::describe_failure).
  std::function<std::string(std::string_view what, const std::string& why)> describe;
  std::function<std::unique_ptr<Marker>()> make_marker;
  std::function<void()> watchdog_start;                 // run first on the watchdog thread (cudaSetDevice)
  std::function<void(const std::string& line)> report;  // the watchdog's messages; default: stderr
  // The watchdog's end of the process; tests pass one that records the status and returns, after which
  // the watchdog stops watching.
  std::function<void(int status)> exit_process;
};

class CommSupervisor {
 public:
  // Starts the watchdog thread.
  explicit CommSupervisor(CommSupervisorOptions options);
  ~CommSupervisor();  // shutdown() if not done yet
  CommSupervisor(const CommSupervisor&) = delete;
  CommSupervisor& operator=(const CommSupervisor&) = delete;

  struct Created {
    std::unique_ptr<Communicator> comm;  // null when the creation failed before making one
    CommStatus status;                   // the creation call's result
  };
  // Runs `make` (the creation call) under the watchdog's deadline and settles its status; throws
  // engine::Error (after aborting what was created) on a failure or the timeout.
  void create(std::string_view what, const std::function<Created()>& make);

  // Queues one collective: `enqueue` makes the library calls (the communicator locked) and returns the status
  // of the last (the group's end), then a marker is recorded on `stream` and watched. Throws after a failure.
  void collective(std::string what, void* stream, const std::function<CommStatus()>& enqueue);

  // Blocks until the work queued on `stream` is done; on an async error or the timeout aborts and throws.
  void synchronize(void* stream);

  // Throws when the group failed earlier (names `what`, the call refused).
  void check_usable(std::string_view what) const;

  bool failed() const { return failed_.load(); }

  // Frees the communicator: ncclCommDestroy after a clean finish, ncclCommAbort on an error path (a failure,
  // `error_path`, an async error or work still queued, which a dead peer would never finish); then stops
  // the watchdog. Never throws.
  void shutdown(bool error_path);

 private:
  struct Pending {
    std::unique_ptr<Marker> marker;
    std::chrono::steady_clock::time_point deadline;
    std::string what;
  };
  class HostCall;

  // Polls `status` (re-read through async_status) until it is Ready; aborts and throws on Failed or after
  // `deadline`.
  void settle(CommStatus status, std::string_view what, std::chrono::steady_clock::time_point deadline);
  [[noreturn]] void fail(std::string_view what, const std::string& why);
  bool abort_once();  // comm_mutex_ held; true when this call aborted
  bool watchdog_lock(std::unique_lock<std::mutex>& lock, std::chrono::milliseconds wait);
  std::unique_lock<std::mutex> main_lock();
  CommStatus locked_async_status();
  bool queued_work_done();
  void watch();
  void watchdog_fail(const std::string& what, const std::string& why);

  CommSupervisorOptions options_;
  std::atomic<bool> failed_{false};
  std::atomic<bool> watchdog_failing_{false};  // the watchdog wants the mutex to abort: no new calls
  std::atomic<bool> watchdog_waiting_{false};  // the watchdog is trying to take comm_mutex_
  std::string last_ = "initialization";        // the main thread's last collective, for messages

  std::mutex comm_mutex_;  // every call into comm_, and its reset
  std::unique_ptr<Communicator> comm_;
  std::unique_ptr<Marker> sync_marker_;

  // The watchdog's state, under watch_mutex_ (taken after comm_mutex_ where both are held, never before).
  std::mutex watch_mutex_;
  std::condition_variable wake_;
  std::deque<Pending> pending_;
  std::vector<std::unique_ptr<Marker>> spare_markers_;
  std::string host_call_;  // the main thread's blocking call being watched; empty when none
  std::chrono::steady_clock::time_point host_deadline_;
  bool stop_ = false;
  bool shut_down_ = false;
  std::thread watchdog_;  // last: started when everything above exists
};

}  // namespace engine::dist
