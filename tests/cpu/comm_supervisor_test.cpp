// dist::CommSupervisor, the NCCL process group's policy, driven by a fake communicator and fake stream
// markers: what a creation, a collective, a failure and a teardown do with the statuses NCCL returns
// (issue 14, defects 1, 3, 4 and 5 of the NCCL process group). The fakes are in comm_supervisor_fakes.h; the
// teardown's cases (defect 5) in comm_supervisor_teardown_test.cpp.
#include "dist/comm_supervisor.h"

#include <atomic>
#include <chrono>
#include <deque>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "dist/process_group.h"
#include "tests/cpu/comm_supervisor_fakes.h"

namespace engine::dist {
namespace {

using namespace std::chrono_literals;
using State = CommStatus::State;
using namespace comm_fakes;  // the fakes of this suite (comm_supervisor_fakes.h)

// --- Defect 1: a creation that answers ncclInProgress (a non-blocking communicator) is polled, not refused.

TEST(CommSupervisor, CreationInProgressIsPolledUntilReady) {
  auto f = std::make_shared<FakeNccl>();
  f->script({CommStatus::in_progress(), CommStatus::in_progress(), CommStatus::ready()});
  CommSupervisor s(fake_options(f, 5000ms));
  EXPECT_NO_THROW(s.create("ncclCommInitRankConfig", [&] { return made(f, CommStatus::in_progress()); }));
  EXPECT_EQ(f->main_async_calls.load(), 3) << "polled until ncclCommGetAsyncError said ncclSuccess";
  EXPECT_FALSE(s.failed());
  EXPECT_EQ(f->aborts.load(), 0);
}

TEST(CommSupervisor, CreationStillInProgressAtTheTimeoutAbortsAndNamesTheRank) {
  auto f = std::make_shared<FakeNccl>();
  f->async_default = CommStatus::in_progress();
  CommSupervisor s(fake_options(f, 50ms));
  try {
    s.create("ncclCommInitRankConfig", [&] { return made(f, CommStatus::in_progress()); });
    FAIL() << "a creation that never finishes did not throw";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("rank 1 of 2 (nccl): ncclCommInitRankConfig failed: still in progress after 50 ms"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("the communicator was aborted"), std::string::npos) << what;
  }
  EXPECT_TRUE(s.failed());
  EXPECT_EQ(f->aborts.load(), 1);
}

TEST(CommSupervisor, CreationErrorThrowsTheLibraryMessage) {
  auto f = std::make_shared<FakeNccl>();
  CommSupervisor s(fake_options(f, 5000ms));
  try {
    s.create("ncclCommInitRankConfig", [&] {
      return CommSupervisor::Created{nullptr, CommStatus::failed("NCCL error: unhandled system error")};
    });
    FAIL() << "a failed creation did not throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("ncclCommInitRankConfig failed: NCCL error: unhandled system error"),
              std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(s.failed());
  EXPECT_EQ(f->aborts.load(), 0) << "nothing was created, so nothing to abort";
}

// A blocking creation waits for every rank; one that never comes is ended by the watchdog.
TEST(CommSupervisor, BlockingCreationPastTheTimeoutEndsTheProcessWithPeerFailureStatus) {
  auto f = std::make_shared<FakeNccl>();
  CommSupervisor s(fake_options(f, 30ms));
  s.create("ncclCommInitRankConfig", [&] {
    wait_for_exit(*f, 2000ms);  // blocked until the watchdog has acted
    return made(f, CommStatus::ready());
  });
  EXPECT_EQ(f->exit_status.load(), kPeerFailureExitStatus);
  EXPECT_TRUE(f->said("ncclCommInitRankConfig failed: not finished after 30 ms"));
}

// --- Defect 3: with a blocking communicator a collective is queued when the call returns: no polling.

TEST(CommSupervisor, ReadyCollectiveIsNeitherPolledNorSlept) {
  auto f = std::make_shared<FakeNccl>();
  CommSupervisorOptions o = fake_options(f, 5000ms);
  o.poll_interval = 2000ms;  // one polling step would show in the time taken
  CommSupervisor s(std::move(o));
  create_ready(s, f);
  f->main_async_calls = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 20; ++i) {
    s.collective("all_reduce(avg) of float32[3]", nullptr, [] { return CommStatus::ready(); });
  }
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(f->main_async_calls.load(), 0) << "a ncclSuccess group end needs no ncclCommGetAsyncError";
  EXPECT_LT(took, 1000ms) << "20 collectives must not wait for a polling step";
}

TEST(CommSupervisor, InProgressGroupEndIsPolledUntilQueued) {
  auto f = std::make_shared<FakeNccl>();
  CommSupervisor s(fake_options(f, 5000ms));
  create_ready(s, f);
  f->script({CommStatus::in_progress(), CommStatus::ready()});
  EXPECT_NO_THROW(s.collective("broadcast", nullptr, [] { return CommStatus::in_progress(); }));
  EXPECT_FALSE(s.failed());
}

TEST(CommSupervisor, EnqueueErrorAbortsAndRefusesLaterCollectives) {
  auto f = std::make_shared<FakeNccl>();
  CommSupervisor s(fake_options(f, 5000ms));
  create_ready(s, f);
  EXPECT_THROW(s.collective("all_gather", nullptr, [] { return CommStatus::failed("NCCL error: remote"); }),
               Error);
  EXPECT_EQ(f->aborts.load(), 1);
  try {
    s.collective("all_reduce", nullptr, [] { return CommStatus::ready(); });
    FAIL() << "a failed group accepted a collective";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the communicator was aborted earlier"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(f->aborts.load(), 1);
}

// --- Defect 4: the watchdog and the main thread share one abort, and a failed group exits with status 3.

TEST(CommSupervisor, WatchdogTimeoutAbortsOnceAndExitsWithPeerFailureStatus) {
  auto f = std::make_shared<FakeNccl>();
  CommSupervisor s(fake_options(f, 30ms));
  create_ready(s, f);
  f->stream = State::InProgress;  // the collective never finishes: a dead peer
  s.collective("all_reduce(avg) of float32[1024]", nullptr, [] { return CommStatus::ready(); });
  ASSERT_TRUE(wait_for_exit(*f));
  EXPECT_EQ(f->exit_status.load(), kPeerFailureExitStatus);
  EXPECT_EQ(f->aborts.load(), 1);
  EXPECT_TRUE(s.failed());
  EXPECT_TRUE(f->said("all_reduce(avg) of float32[1024] failed: not finished after 30 ms"));
  EXPECT_TRUE(f->said("the watchdog aborted the communicator"));
  EXPECT_THROW(s.synchronize(nullptr), Error);
  s.shutdown(false);
  EXPECT_EQ(f->aborts.load(), 1);
  EXPECT_EQ(f->destroys.load(), 0);
}

TEST(CommSupervisor, WatchdogSeesAnAsyncErrorAndAMarkerError) {
  for (const bool async_error : {true, false}) {
    auto f = std::make_shared<FakeNccl>();
    CommSupervisor s(fake_options(f, 60000ms));
    create_ready(s, f);
    f->stream = State::InProgress;
    s.collective("all_reduce(sum) of float32[8]", nullptr, [] { return CommStatus::ready(); });
    if (async_error) {
      const std::lock_guard<std::mutex> lock(f->mutex);
      f->async_default = CommStatus::failed("NCCL async error: remote process exited");
    } else {
      f->stream = State::Failed;
    }
    ASSERT_TRUE(wait_for_exit(*f)) << (async_error ? "async error" : "marker error");
    EXPECT_EQ(f->exit_status.load(), kPeerFailureExitStatus);
    EXPECT_EQ(f->aborts.load(), 1);
    EXPECT_TRUE(f->said(async_error ? "remote process exited" : "illegal memory access"));
  }
}

// The main thread's synchronize and the watchdog reach the same timeout together, while the main thread
// keeps the communicator busy: every run aborts once, and no call overlaps another or follows the abort.
TEST(CommSupervisor, ConcurrentFailuresAbortOnceAndNeverOverlapACall) {
  for (int run = 0; run < 60; ++run) {
    auto f = std::make_shared<FakeNccl>();
    f->call_time = 200us;
    CommSupervisorOptions o = fake_options(f, 5ms);
    o.watch_interval = 1ms;
    o.poll_interval = 50us;
    {
      CommSupervisor s(std::move(o));
      create_ready(s, f);
      f->stream = State::InProgress;
      s.collective("all_reduce(avg) of float32[16]", nullptr, [] { return CommStatus::ready(); });
      EXPECT_THROW(s.synchronize(nullptr), Error);
      wait_for_exit(*f, 50ms);  // the watchdog may have lost the race: then it never exits
    }
    ASSERT_EQ(f->aborts.load(), 1) << "run " << run;
    ASSERT_EQ(f->overlaps.load(), 0) << "run " << run << ": a call ran beside another";
    ASSERT_EQ(f->used_after_free.load(), 0) << "run " << run << ": a call after the abort";
    ASSERT_EQ(f->destroys.load(), 0) << "run " << run;
  }
}

// The watchdog fails on an async error while the main thread queues collectives as fast as it can.
TEST(CommSupervisor, WatchdogAbortNeverRunsBesideTheMainThreadsCalls) {
  for (int run = 0; run < 30; ++run) {
    auto f = std::make_shared<FakeNccl>();
    f->call_time = 100us;
    CommSupervisorOptions o = fake_options(f, 60000ms);
    o.watch_interval = 1ms;
    CommSupervisor s(std::move(o));
    create_ready(s, f);
    f->stream = State::InProgress;
    std::atomic<int> enqueues{0};
    const auto enqueue = [&] {
      f->enter();  // the NCCL calls of a collective are calls into the communicator too
      ++enqueues;
      f->leave();
      return CommStatus::ready();
    };
    s.collective("all_reduce(avg) of float32[4]", nullptr, enqueue);
    {
      const std::lock_guard<std::mutex> lock(f->mutex);
      f->async_default = CommStatus::failed("NCCL async error: remote process exited");
    }
    try {
      for (int i = 0; i < 100000 && f->exit_status.load() < 0; ++i) {
        s.collective("all_reduce(avg) of float32[4]", nullptr, enqueue);
      }
    } catch (const Error&) {
      // the watchdog's abort came first: the group refuses the next collective
    }
    ASSERT_TRUE(wait_for_exit(*f)) << "run " << run;
    EXPECT_EQ(f->exit_status.load(), kPeerFailureExitStatus);
    ASSERT_EQ(f->aborts.load(), 1) << "run " << run;
    ASSERT_EQ(f->overlaps.load(), 0) << "run " << run << ": the abort ran beside a call";
    ASSERT_EQ(f->used_after_free.load(), 0) << "run " << run << ": a collective after the abort";
  }
}

// The real end of the process: status 3 (kPeerFailureExitStatus), the rank and the collective on stderr.
TEST(CommSupervisorDeathTest, WatchdogEndsTheProcessWithPeerFailureStatus) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        auto f = std::make_shared<FakeNccl>();
        CommSupervisorOptions o = fake_options(f, 20ms);
        o.exit_process = nullptr;  // the defaults: std::_Exit, and stderr
        o.report = nullptr;
        CommSupervisor s(std::move(o));
        create_ready(s, f);
        f->stream = State::InProgress;
        s.collective("all_reduce(avg) of float32[2]", nullptr, [] { return CommStatus::ready(); });
        std::this_thread::sleep_for(10s);
        std::_Exit(0);
      },
      ::testing::ExitedWithCode(kPeerFailureExitStatus),
      "rank 1 of 2 \\(nccl\\): all_reduce\\(avg\\) of float32\\[2\\] failed: not finished after 20 ms");
}

}  // namespace
}  // namespace engine::dist
