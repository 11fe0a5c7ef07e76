#include "dist/comm_supervisor.h"

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <future>

#include <fmt/format.h>

#include "core/error.h"
#include "dist/process_group.h"

namespace engine::dist {

using Clock = std::chrono::steady_clock;

// The main thread's blocking call, watched by the watchdog until this object goes out of scope.
class CommSupervisor::HostCall {
 public:
  HostCall(CommSupervisor& s, std::string_view what) : s_(s) {
    const std::lock_guard<std::mutex> lock(s_.watch_mutex_);
    s_.host_call_ = what;
    s_.host_deadline_ = Clock::now() + s_.options_.timeout;
  }
  ~HostCall() {
    const std::lock_guard<std::mutex> lock(s_.watch_mutex_);
    s_.host_call_.clear();
  }
  HostCall(const HostCall&) = delete;
  HostCall& operator=(const HostCall&) = delete;

 private:
  CommSupervisor& s_;
};

// The watchdog takes the mutex within `wait` by polling try_lock (a std::timed_mutex would do, but GCC 12's
// thread sanitizer does not see its pthread_mutex_clocklock); meanwhile the main thread stands back
// (main_lock), so that a main thread queueing collectives back to back cannot starve it.
bool CommSupervisor::watchdog_lock(std::unique_lock<std::mutex>& lock, std::chrono::milliseconds wait) {
  watchdog_waiting_.store(true);
  const auto end = Clock::now() + wait;
  bool locked = lock.try_lock();
  while (!locked && Clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::microseconds(50));
    locked = lock.try_lock();
  }
  watchdog_waiting_.store(false);
  return locked;
}

std::unique_lock<std::mutex> CommSupervisor::main_lock() {
  while (watchdog_waiting_.load()) std::this_thread::yield();
  return std::unique_lock<std::mutex>(comm_mutex_);
}

CommSupervisor::CommSupervisor(CommSupervisorOptions options) : options_(std::move(options)) {
  ENGINE_CHECK(options_.timeout.count() > 0, "communicator: the timeout must be positive, got {} ms",
               options_.timeout.count());
  ENGINE_CHECK(options_.make_marker != nullptr, "communicator: no marker factory");
  if (!options_.describe) {
    options_.describe = [](std::string_view what, const std::string& why) {
      return fmt::format("{} failed: {}", what, why);
    };
  }
  if (!options_.exit_process) options_.exit_process = [](int status) { std::_Exit(status); };
  if (!options_.report) {
    options_.report = [](const std::string& line) {
      std::fprintf(stderr, "%s\n", line.c_str());
      std::fflush(stderr);
    };
  }
  watchdog_ = std::thread([this] { watch(); });
}

CommSupervisor::~CommSupervisor() { shutdown(std::uncaught_exceptions() > 0); }

void CommSupervisor::create(std::string_view what, const std::function<Created()>& make) {
  last_ = what;
  const auto deadline = Clock::now() + options_.timeout;
  Created made;
  {
    const HostCall call(*this, what);  // a blocking creation waits for every rank: bounded by the watchdog
    made = make();
  }
  {
    const std::lock_guard<std::mutex> lock(comm_mutex_);
    comm_ = std::move(made.comm);
  }
  settle(std::move(made.status), what, deadline);
}

void CommSupervisor::collective(std::string what, void* stream, const std::function<CommStatus()>& enqueue) {
  check_usable(what);
  last_ = what;
  const auto deadline = Clock::now() + options_.timeout;
  CommStatus status;
  {
    const HostCall call(*this, what);  // a launch blocks while a stalled collective fills the stream's queue
    const std::unique_lock<std::mutex> lock = main_lock();
    if (comm_ == nullptr) {
      status = CommStatus::failed("the communicator is gone");
    } else {
      try {
        status = enqueue();
      } catch (const std::exception& e) {
        status = CommStatus::failed(e.what());
      }
    }
  }
  settle(std::move(status), what, deadline);

  std::unique_ptr<Marker> marker;
  {
    const std::lock_guard<std::mutex> lock(watch_mutex_);
    if (!spare_markers_.empty()) {
      marker = std::move(spare_markers_.back());
      spare_markers_.pop_back();
    }
  }
  if (marker == nullptr) marker = options_.make_marker();
  marker->record(stream);
  {
    const std::lock_guard<std::mutex> lock(watch_mutex_);
    pending_.push_back({std::move(marker), Clock::now() + options_.timeout, std::move(what)});
  }
  // No wake-up: deadlines are far, and the watchdog's next look (watch_interval) is soon enough.
}

void CommSupervisor::synchronize(void* stream) {
  check_usable(last_);
  if (sync_marker_ == nullptr) sync_marker_ = options_.make_marker();
  sync_marker_->record(stream);
  const auto deadline = Clock::now() + options_.timeout;
  for (;;) {
    const CommStatus done = sync_marker_->query();
    if (done.state == CommStatus::State::Ready) return;
    if (done.state == CommStatus::State::Failed) fail(last_, done.error);
    const CommStatus async = locked_async_status();
    if (async.state == CommStatus::State::Failed) fail(last_, async.error);
    if (Clock::now() >= deadline) {
      fail(last_,
           fmt::format("not finished after {} ms (a peer died or stalled?)", options_.timeout.count()));
    }
    std::this_thread::sleep_for(options_.poll_interval);
  }
}

void CommSupervisor::check_usable(std::string_view what) const {
  ENGINE_CHECK(!failed_.load(), "{}", options_.describe(what, "the communicator was aborted earlier"));
  ENGINE_CHECK(!watchdog_failing_.load(), "{}",
               options_.describe(what, "the watchdog is ending this process after a failure"));
  ENGINE_CHECK(!shut_down_, "{}", options_.describe(what, "the process group was shut down"));
}

void CommSupervisor::settle(CommStatus status, std::string_view what, Clock::time_point deadline) {
  for (;;) {
    if (status.state == CommStatus::State::Ready) return;
    if (status.state == CommStatus::State::Failed) fail(what, status.error);
    if (Clock::now() >= deadline) {
      fail(what,
           fmt::format("still in progress after {} ms (a rank never joined?)", options_.timeout.count()));
    }
    std::this_thread::sleep_for(options_.poll_interval);
    status = locked_async_status();
  }
}

void CommSupervisor::fail(std::string_view what, const std::string& why) {
  bool aborted = false;
  {
    const HostCall call(*this, fmt::format("the abort after {}", what));  // an abort can hang too
    const std::lock_guard<std::mutex> lock(comm_mutex_);
    aborted = abort_once();
  }
  ENGINE_FAIL("{}", options_.describe(what, aborted ? why + "; the communicator was aborted" : why));
}

bool CommSupervisor::abort_once() {
  if (failed_.exchange(true)) return false;  // aborted already (or failing without a communicator)
  if (comm_ == nullptr) return false;
  comm_->abort();
  comm_.reset();  // the abort freed it
  return true;
}

CommStatus CommSupervisor::locked_async_status() {
  const std::unique_lock<std::mutex> lock = main_lock();
  if (comm_ == nullptr) return CommStatus::failed("the communicator is gone (aborted)");
  return comm_->async_status();
}

bool CommSupervisor::queued_work_done() {
  const std::lock_guard<std::mutex> lock(watch_mutex_);
  for (const Pending& p : pending_) {
    if (p.marker->query().state != CommStatus::State::Ready) return false;
  }
  return true;
}

void CommSupervisor::shutdown(bool error_path) {
  if (shut_down_) return;
  shut_down_ = true;
  {
    const HostCall call(*this, "the communicator's teardown");
    const std::lock_guard<std::mutex> lock(comm_mutex_);
    if (comm_ != nullptr && !failed_.load()) {
      // ncclCommDestroy waits for every queued kernel, which a dead peer never lets finish: destroy only
      // after a clean finish, abort otherwise.
      const bool clean =
          !error_path && queued_work_done() && comm_->async_status().state == CommStatus::State::Ready;
      if (clean) {
        comm_->destroy();
        comm_.reset();
      } else {
        abort_once();
      }
    }
  }
  {
    const std::lock_guard<std::mutex> lock(watch_mutex_);
    stop_ = true;
  }
  wake_.notify_one();
  if (watchdog_.joinable()) watchdog_.join();
}

// The watchdog thread: markers done go back to the spares in order; a failed marker, an async error, or a
// marker or host call past its deadline ends the process.
void CommSupervisor::watch() {
  if (options_.watchdog_start) options_.watchdog_start();
  std::unique_lock<std::mutex> lock(watch_mutex_);
  while (!stop_) {
    wake_.wait_for(lock, options_.watch_interval);
    if (stop_) break;
    std::string what, why;
    const bool failed = failed_.load();  // the main thread aborted: it reports; its abort is a host call
    while (!failed && !pending_.empty()) {
      const CommStatus q = pending_.front().marker->query();
      if (q.state == CommStatus::State::InProgress) break;
      if (q.state == CommStatus::State::Failed) {
        what = pending_.front().what;
        why = q.error;
        break;
      }
      spare_markers_.push_back(std::move(pending_.front().marker));
      pending_.pop_front();
    }
    const auto now = Clock::now();
    const std::string late =
        fmt::format("not finished after {} ms (a peer died or stalled?)", options_.timeout.count());
    if (what.empty() && !host_call_.empty() && now >= host_deadline_) {
      what = host_call_;
      why = late;
    } else if (what.empty() && !failed && !pending_.empty() && now >= pending_.front().deadline) {
      what = pending_.front().what;
      why = late;
    }
    const bool poll_async = what.empty() && !failed && !pending_.empty();
    const std::string oldest = pending_.empty() ? std::string() : pending_.front().what;
    lock.unlock();
    if (poll_async) {
      // Never wait long for the mutex: the main thread may be blocked in a launch while holding it.
      std::unique_lock<std::mutex> comm_lock(comm_mutex_, std::defer_lock);
      if (watchdog_lock(comm_lock, options_.watch_interval) && comm_ != nullptr && !failed_.load()) {
        const CommStatus async = comm_->async_status();
        if (async.state == CommStatus::State::Failed) {
          what = oldest;
          why = async.error;
        }
      }
    }
    if (!what.empty()) {
      watchdog_fail(what, why);
      return;  // only where exit_process returned (tests)
    }
    lock.lock();
  }
}

void CommSupervisor::watchdog_fail(const std::string& what, const std::string& why) {
  options_.report(options_.describe(
      what, fmt::format("{}; the watchdog ends this process (exit status {})", why, kPeerFailureExitStatus)));
  // Abort first where that cannot hang this process: the mutex within the grace (the main thread may hold
  // it, blocked in a launch; it takes no new calls from now on, so it cannot starve this thread), and the
  // abort itself within the grace, on a helper thread.
  watchdog_failing_.store(true);
  std::unique_lock<std::mutex> comm_lock(comm_mutex_, std::defer_lock);
  std::string outcome;
  if (!watchdog_lock(comm_lock, options_.abort_grace)) {
    failed_.store(true);
    outcome = "the main thread holds the communicator: not aborted";
  } else if (failed_.exchange(true) || comm_ == nullptr) {
    outcome = "no communicator left to abort";  // aborted or destroyed by the main thread
  } else {
    Communicator* comm = comm_.release();  // leaked if the abort never returns: the process is ending
    std::packaged_task<void()> abort_task([comm] {
      comm->abort();
      delete comm;
    });
    std::future<void> aborted = abort_task.get_future();
    std::thread helper(std::move(abort_task));
    if (aborted.wait_for(options_.abort_grace) == std::future_status::ready) {
      helper.join();
      outcome = "the watchdog aborted the communicator";
    } else {
      helper.detach();
      outcome =
          fmt::format("the communicator's abort did not return within {} ms", options_.abort_grace.count());
    }
  }
  options_.report(options_.describe(what, outcome));
  options_.exit_process(kPeerFailureExitStatus);
}

}  // namespace engine::dist
