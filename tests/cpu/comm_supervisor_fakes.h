#pragma once
// The fakes tests/cpu/comm_supervisor_test.cpp and comm_supervisor_teardown_test.cpp drive
// dist::CommSupervisor with: a fake NCCL communicator and fake stream markers that record what the supervisor
// did with them.

#include <atomic>
#include <chrono>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "dist/comm_supervisor.h"

namespace engine::dist::comm_fakes {

using namespace std::chrono_literals;
using State = CommStatus::State;

// What the fake communicator saw. `inside` counts the calls running now: a call that starts while another
// runs is an overlap (the race an unlocked ncclCommAbort had with the main thread's NCCL calls), a call
// after the abort or destroy freed the communicator is a use after free.
struct FakeNccl {
  std::atomic<int> aborts{0}, destroys{0}, async_calls{0}, main_async_calls{0};
  std::atomic<int> inside{0}, overlaps{0}, used_after_free{0};
  std::atomic<bool> freed{false};
  std::chrono::microseconds call_time{0};     // widens the windows where calls could overlap
  std::chrono::milliseconds destroy_time{0};  // a teardown that takes long
  std::thread::id main_thread = std::this_thread::get_id();

  std::mutex mutex;                     // guards the two below
  std::deque<CommStatus> async_script;  // ncclCommGetAsyncError's answers, then async_default
  CommStatus async_default = CommStatus::ready();

  std::atomic<State> stream{State::Ready};  // every marker's answer: the stream's work done or not

  std::atomic<int> exit_status{-1};
  std::mutex messages_mutex;
  std::vector<std::string> reported;  // the watchdog's lines

  void enter() {
    if (inside.fetch_add(1) != 0) ++overlaps;
    if (freed.load()) ++used_after_free;
    std::this_thread::sleep_for(call_time);
  }
  void leave() { --inside; }
  void script(std::vector<CommStatus> answers) {
    const std::lock_guard<std::mutex> lock(mutex);
    async_script.assign(answers.begin(), answers.end());
  }
  // True when the watchdog reported a line containing `part`.
  bool said(const std::string& part) {
    const std::lock_guard<std::mutex> lock(messages_mutex);
    for (const std::string& m : reported) {
      if (m.find(part) != std::string::npos) return true;
    }
    return false;
  }
};

class FakeCommunicator final : public Communicator {
 public:
  explicit FakeCommunicator(std::shared_ptr<FakeNccl> f) : f_(std::move(f)) {}
  CommStatus async_status() override {
    f_->enter();
    ++f_->async_calls;
    if (std::this_thread::get_id() == f_->main_thread) ++f_->main_async_calls;
    CommStatus s;
    {
      const std::lock_guard<std::mutex> lock(f_->mutex);
      if (f_->async_script.empty()) {
        s = f_->async_default;
      } else {
        s = f_->async_script.front();
        f_->async_script.pop_front();
      }
    }
    f_->leave();
    return s;
  }
  void abort() override {
    f_->enter();
    ++f_->aborts;
    f_->freed = true;
    f_->leave();
  }
  void destroy() override {
    f_->enter();
    std::this_thread::sleep_for(f_->destroy_time);
    ++f_->destroys;
    f_->freed = true;
    f_->leave();
  }

 private:
  std::shared_ptr<FakeNccl> f_;
};

class FakeMarker final : public Marker {
 public:
  explicit FakeMarker(std::shared_ptr<FakeNccl> f) : f_(std::move(f)) {}
  void record(void*) override {}
  CommStatus query() override {
    const State s = f_->stream.load();
    return s == State::Failed ? CommStatus::failed("CUDA error: an illegal memory access")
                              : CommStatus{s, {}};
  }

 private:
  std::shared_ptr<FakeNccl> f_;
};

// Options for a supervisor of rank 1 of 2 whose watchdog records its exit status instead of exiting.
inline CommSupervisorOptions fake_options(const std::shared_ptr<FakeNccl>& f,
                                          std::chrono::milliseconds timeout) {
  CommSupervisorOptions o;
  o.timeout = timeout;
  o.poll_interval = 100us;
  o.watch_interval = 2ms;
  o.abort_grace = 2000ms;
  o.describe = [](std::string_view what, const std::string& why) {
    return "rank 1 of 2 (nccl): " + std::string(what) + " failed: " + why;
  };
  o.make_marker = [f] { return std::make_unique<FakeMarker>(f); };
  o.exit_process = [f](int status) { f->exit_status = status; };
  o.report = [f](const std::string& line) {
    const std::lock_guard<std::mutex> lock(f->messages_mutex);
    f->reported.push_back(line);
  };
  return o;
}

inline CommSupervisor::Created made(const std::shared_ptr<FakeNccl>& f, CommStatus status) {
  return {std::make_unique<FakeCommunicator>(f), std::move(status)};
}

inline void create_ready(CommSupervisor& s, const std::shared_ptr<FakeNccl>& f) {
  s.create("ncclCommInitRankConfig", [&] { return made(f, CommStatus::ready()); });
}

inline bool wait_for_exit(const FakeNccl& f, std::chrono::milliseconds limit = 5000ms) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (f.exit_status.load() < 0 && std::chrono::steady_clock::now() < end) std::this_thread::sleep_for(1ms);
  return f.exit_status.load() >= 0;
}

}  // namespace engine::dist::comm_fakes
