#include "data/prefetcher.h"

#include <algorithm>
#include <system_error>
#include <utility>

#include "core/error.h"

namespace engine::data {

Prefetcher::Prefetcher(std::int64_t num_batches, int depth, int workers, Fill fill, Init init)
    : num_batches_(num_batches), depth_(depth), fill_(std::move(fill)), init_(std::move(init)) {
  ENGINE_CHECK(num_batches >= 0, "Prefetcher: {} batches", num_batches);
  ENGINE_CHECK(depth >= 1, "Prefetcher: depth {} must be at least 1", depth);
  ENGINE_CHECK(workers >= 1, "Prefetcher: {} workers, need at least 1", workers);
  slots_.resize(static_cast<std::size_t>(depth));
  for (int s = 0; s < depth; ++s) slots_[static_cast<std::size_t>(s)].expected = s;
  // No more threads than batches that can be in flight at once.
  const auto threads =
      static_cast<int>(std::min<std::int64_t>({workers, depth, std::max<std::int64_t>(num_batches, 1)}));
  workers_.reserve(static_cast<std::size_t>(threads));
  try {
    for (int t = 0; t < threads; ++t) {
      workers_.emplace_back([this] {
        try {
          worker_loop();
        } catch (...) {  // only a failing mutex or condition variable gets here; never let it terminate
          try {
            std::lock_guard lock(mutex_);
            record_error(next_acquire_, std::current_exception());  // the batch it held may never come
          } catch (...) {
          }
          changed_.notify_all();
        }
      });
    }
  } catch (...) {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    changed_.notify_all();
    for (auto& w : workers_) w.join();
    // A thread that cannot start (its stack cannot be mapped under a memory limit, or ulimit -u) said only
    // "Resource temporarily unavailable" (scripts/faults.sh's memory kind): say what could not start.
    try {
      throw;
    } catch (const std::system_error& e) {
      ENGINE_FAIL(
          "host out of memory (or the thread limit, ulimit -u): cannot start the data loader's worker "
          "thread {} of {} (a thread's stack is address space too): {}",
          workers_.size() + 1, threads, e.what());
    }
  }
}

Prefetcher::~Prefetcher() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  for (auto& w : workers_) w.join();
}

void Prefetcher::record_error(std::int64_t batch, std::exception_ptr error) {
  if (!error_ || batch < error_batch_) {
    error_ = std::move(error);
    error_batch_ = batch;
  }
}

void Prefetcher::worker_loop() {
  if (init_) {
    try {
      init_();
    } catch (...) {
      std::lock_guard lock(mutex_);
      record_error(next_fill_, std::current_exception());
      changed_.notify_all();
      return;
    }
  }
  std::unique_lock lock(mutex_);
  for (;;) {
    // After an error no new batch is started; batches already taken are finished, since the consumer
    // still expects every batch before the failed one.
    if (stop_ || error_ || next_fill_ >= num_batches_) return;
    const std::int64_t batch = next_fill_++;
    Slot& slot = slots_[static_cast<std::size_t>(batch % depth_)];
    changed_.wait(lock, [&] { return stop_ || (slot.state == State::Free && slot.expected == batch); });
    if (stop_) return;
    slot.state = State::Filling;
    lock.unlock();
    std::exception_ptr error;
    try {
      fill_(batch, static_cast<int>(batch % depth_));
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    slot.state = State::Ready;
    if (error) record_error(batch, std::move(error));
    changed_.notify_all();
  }
}

void Prefetcher::rethrow_error() const {
  try {
    std::rethrow_exception(error_);
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    ENGINE_FAIL("data loader worker failed on batch {}: {}", error_batch_, e.what());
  } catch (...) {
    ENGINE_FAIL("data loader worker failed on batch {} with an exception of unknown type", error_batch_);
  }
}

int Prefetcher::acquire(std::int64_t batch) {
  std::unique_lock lock(mutex_);
  ENGINE_CHECK(batch == next_acquire_ && batch < num_batches_,
               "Prefetcher: acquire({}) out of order: next is batch {} of {}", batch, next_acquire_,
               num_batches_);
  Slot& slot = slots_[static_cast<std::size_t>(batch % depth_)];
  changed_.wait(lock, [&] {
    return (error_ && error_batch_ <= batch) || (slot.state == State::Ready && slot.expected == batch);
  });
  if (error_ && error_batch_ <= batch) rethrow_error();
  slot.state = State::Held;
  ++next_acquire_;
  return static_cast<int>(batch % depth_);
}

void Prefetcher::release(int slot_index) {
  {
    std::lock_guard lock(mutex_);
    ENGINE_CHECK(slot_index >= 0 && slot_index < depth_, "Prefetcher: release of slot {}", slot_index);
    Slot& slot = slots_[static_cast<std::size_t>(slot_index)];
    ENGINE_CHECK(slot.state == State::Held, "Prefetcher: release of slot {}, which is not held", slot_index);
    slot.state = State::Free;
    slot.expected += depth_;
  }
  changed_.notify_all();
}

}  // namespace engine::data
