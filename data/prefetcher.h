#pragma once
// Prefetcher: worker threads that fill batches 0, 1, 2, ... of an epoch ahead of one consumer, through a
// fixed ring of `depth` slots (batch k always lands in slot k % depth, so buffers are reused and nothing
// queues up without bound).
//
// The consumer takes batches strictly in order: acquire(k) blocks until batch k is in its slot, and
// release(slot) lets a worker refill the slot with batch k + depth. So at most `depth` batches are being
// filled or waiting while the consumer works.
//
// Errors: an exception thrown by `fill` (or by the worker's `init`) is kept and rethrown to the consumer by
// acquire() of the batch that failed (and of every later batch), as engine::Error: never std::terminate.
// Batches before it are still delivered. The destructor stops the workers (each finishes the batch in hand)
// and joins them, whether or not the epoch was consumed.

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace engine::data {

class Prefetcher {
 public:
  using Fill = std::function<void(std::int64_t batch, int slot)>;
  using Init = std::function<void()>;

  // Starts `workers` threads, each running `init` once (e.g. selecting its CUDA device), then filling
  // batches.
  Prefetcher(std::int64_t num_batches, int depth, int workers, Fill fill, Init init = {});
  ~Prefetcher();
  Prefetcher(const Prefetcher&) = delete;
  Prefetcher& operator=(const Prefetcher&) = delete;

  // Blocks until batch `batch` is ready and returns its slot. Batches must be acquired in order 0, 1, ...
  // Throws engine::Error when a worker failed on this batch or an earlier one.
  int acquire(std::int64_t batch);
  // The consumer is done with the slot's contents; a worker may refill it.
  void release(int slot);

  std::int64_t num_batches() const { return num_batches_; }
  int depth() const { return depth_; }

 private:
  enum class State { Free, Filling, Ready, Held };
  struct Slot {
    State state = State::Free;
    std::int64_t expected = 0;  // the batch this slot holds next
  };

  void worker_loop();
  void record_error(std::int64_t batch, std::exception_ptr error);  // with mutex_ held
  [[noreturn]] void rethrow_error() const;

  const std::int64_t num_batches_;
  const int depth_;
  Fill fill_;
  Init init_;

  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<Slot> slots_;
  std::int64_t next_fill_ = 0;
  std::int64_t next_acquire_ = 0;
  bool stop_ = false;
  std::exception_ptr error_;
  std::int64_t error_batch_ = 0;  // meaningful when error_ is set: the first batch that cannot be delivered
  std::vector<std::thread> workers_;
};

}  // namespace engine::data
