#pragma once
// Runs a test body that could deadlock on its own thread and waits a bounded time, so a deadlock fails the
// test with a message instead of hanging the whole binary until ctest's timeout.

#include <chrono>
#include <functional>
#include <future>
#include <string>
#include <thread>

namespace engine::testing {

// Returns fn()'s result, or "timed out: deadlock?" when it has not returned within `limit`. The stuck thread
// is detached: `fn` must capture by value (shared_ptr) whatever it uses.
inline std::string run_with_timeout(std::function<std::string()> fn, std::chrono::seconds limit) {
  std::packaged_task<std::string()> task(std::move(fn));
  std::future<std::string> result = task.get_future();
  std::thread(std::move(task)).detach();
  if (result.wait_for(limit) != std::future_status::ready) return "timed out: deadlock?";
  return result.get();
}

}  // namespace engine::testing
