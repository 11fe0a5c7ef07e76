#include "apps/train/stop_signal.h"

#include <atomic>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <mutex>
#include <pthread.h>
#include <thread>
#include <unistd.h>

namespace engine::apps {
namespace {

std::atomic<int> g_signal{0};
std::atomic<std::int64_t> g_first_ns{0};  // CLOCK_MONOTONIC of the first signal

// One stop can reach a process twice within moments (Slurm signals every process of the step and torchrun
// forwards the same SIGTERM to its workers): a repeat within this window is that same stop, not a second.
constexpr std::int64_t kRepeatWindowNs = 1'000'000'000;

std::int64_t monotonic_ns() {
  timespec t{};
  ::clock_gettime(CLOCK_MONOTONIC, &t);  // async-signal-safe
  return static_cast<std::int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

void write_stderr(const char* text) {
  // write(2) is async-signal-safe; a short or failed write of a notice is not worth handling.
  const ssize_t ignored = ::write(STDERR_FILENO, text, std::strlen(text));
  (void)ignored;
}

const char* name_of(int signal) {
  switch (signal) {
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
    case SIGUSR1: return "SIGUSR1";
    default: return "a signal";
  }
}

extern "C" void on_stop_signal(int signal) {
  int expected = 0;
  if (!g_signal.compare_exchange_strong(expected, signal)) {
    if (monotonic_ns() - g_first_ns.load() < kRepeatWindowNs) return;  // the same stop, delivered twice
    write_stderr("cnn_train: second stop signal: exiting now, without a checkpoint\n");
    ::_exit(128 + signal);
  }
  g_first_ns.store(monotonic_ns());
  write_stderr("cnn_train: got ");
  write_stderr(name_of(signal));
  write_stderr(
      ": finishing the current step, then saving a checkpoint to resume from (--resume auto); "
      "send it again (a second later) to exit at once\n");
}

}  // namespace

static sigset_t stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  for (const int s : {SIGTERM, SIGINT, SIGUSR1}) sigaddset(&set, s);
  return set;
}

void route_stop_signals_to_one_thread() {
  const sigset_t set = stop_signals();
  ::pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

void install_stop_handlers() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction action {};
    action.sa_handler = on_stop_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;  // blocking calls (sockets, file writes) continue: the step must finish
    for (const int s : {SIGTERM, SIGINT, SIGUSR1}) ::sigaction(s, &action, nullptr);
    // Routed (the calling thread blocks them, as every thread started after it): one thread waits for them
    // and runs the same code, outside any signal context. It lives as long as the process.
    sigset_t current;
    ::pthread_sigmask(SIG_BLOCK, nullptr, &current);
    if (::sigismember(&current, SIGTERM) == 1) {
      std::thread([] {
        const sigset_t set = stop_signals();
        for (;;) {
          int signal = 0;
          if (::sigwait(&set, &signal) == 0) on_stop_signal(signal);
        }
      }).detach();
    }
  });
}

bool stop_requested() { return g_signal.load() != 0; }

int stop_signal() { return g_signal.load(); }

std::string stop_signal_name() { return name_of(g_signal.load()); }

void request_stop_for_testing(int signal) { g_signal.store(signal); }

}  // namespace engine::apps
