#include "dist/launcher.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fcntl.h>
#include <mutex>
#include <optional>
#include <poll.h>
#include <set>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include "core/error.h"
#include "dist/oom_kills.h"
#include "dist/tcp_store.h"
#include "dist/worker_output.h"

extern char** environ;

namespace engine::dist {
namespace {

using Clock = std::chrono::steady_clock;

// Stop signals the launcher got (SIGTERM, SIGINT, SIGUSR1): counted by the handler, forwarded by the loop.
std::atomic<int> g_stop_signals{0};
std::atomic<int> g_last_stop_signal{0};

extern "C" void on_launcher_stop_signal(int signal) {
  g_last_stop_signal.store(signal);
  g_stop_signals.fetch_add(1);
}

// Installs the forwarding handlers for the launcher's lifetime and restores the previous ones after.
class StopSignalForwarding {
 public:
  StopSignalForwarding() {
    g_stop_signals = 0;
    struct sigaction action {};
    action.sa_handler = on_launcher_stop_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    for (std::size_t i = 0; i < kSignals.size(); ++i) ::sigaction(kSignals[i], &action, &previous_[i]);
  }
  ~StopSignalForwarding() {
    for (std::size_t i = 0; i < kSignals.size(); ++i) ::sigaction(kSignals[i], &previous_[i], nullptr);
  }

 private:
  static constexpr std::array<int, 3> kSignals = {SIGTERM, SIGINT, SIGUSR1};
  std::array<struct sigaction, 3> previous_{};
};

// True when `pid` is stopped (state T or t in /proc/PID/stat, after the parenthesised command name).
bool is_stopped(pid_t pid) {
  char text[512] = {};
  const std::string path = "/proc/" + std::to_string(pid) + "/stat";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const ssize_t n = ::read(fd, text, sizeof text - 1);
  ::close(fd);
  const char* close = n > 0 ? std::strrchr(text, ')') : nullptr;
  return close != nullptr && close[1] == ' ' && (close[2] == 'T' || close[2] == 't');
}

struct Worker {
  int rank = 0;
  pid_t pid = -1;
  int out_fd = -1, err_fd = -1;  // read ends
  bool running = false;
  int status = 0;
};

std::string describe_status(int status) {
  if (WIFEXITED(status)) return fmt::format("exited with status {}", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    return fmt::format("was killed by signal {} ({})", WTERMSIG(status), ::strsignal(WTERMSIG(status)));
  }
  return fmt::format("ended with wait status {}", status);
}

int exit_code_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

}  // namespace

std::vector<int> parse_gpu_list(std::string_view text, int device_count, bool allow_repeats) {
  ENGINE_CHECK(!text.empty(), "--gpus is empty: list GPU ids such as --gpus 0,1");
  std::vector<int> ids;
  std::set<int> seen;
  std::size_t start = 0;
  for (;;) {
    const std::size_t comma = text.find(',', start);
    const std::string_view item = text.substr(start, comma == std::string_view::npos ? comma : comma - start);
    ENGINE_CHECK(!item.empty(), "--gpus '{}' has an empty entry", text);
    int id = -1;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), id);
    ENGINE_CHECK(ec == std::errc() && end == item.data() + item.size() && id >= 0,
                 "--gpus '{}': '{}' is not a GPU id", text, item);
    ENGINE_CHECK(id < device_count, "--gpus '{}': GPU {} does not exist ({} GPU(s) visible, ids 0..{})", text,
                 id, device_count, device_count - 1);
    ENGINE_CHECK(allow_repeats || !seen.contains(id),
                 "--gpus '{}': GPU {} is listed twice (two ranks on one GPU need --backend gloo)", text, id);
    seen.insert(id);
    ids.push_back(id);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return ids;
}

int threads_per_worker(int workers, unsigned hardware_threads) {
  ENGINE_CHECK(workers >= 1, "threads_per_worker: {} workers", workers);
  return std::max(1, static_cast<int>(hardware_threads) / workers);
}

LaunchResult launch_workers(const std::vector<std::string>& argv, const LaunchOptions& options) {
  const int world = options.gpus.empty() ? options.nproc : static_cast<int>(options.gpus.size());
  ENGINE_CHECK(world >= 1, "launch_workers: {} workers requested; need at least 1", world);
  ENGINE_CHECK(!argv.empty(), "launch_workers: empty argv");
  ENGINE_CHECK(options.nnodes >= 1 && options.node_rank >= 0 && options.node_rank < options.nnodes,
               "--node-rank {} is not a node of --nnodes {}", options.node_rank, options.nnodes);
  ENGINE_CHECK(
      options.nnodes == 1 || options.master_port > 0,
      "--nnodes {}: every node must name the same --master-port (a free port is chosen only on one node)",
      options.nnodes);
  const int port = options.master_port > 0 ? options.master_port : find_free_port();
  const int first_rank = options.node_rank * world;  // every node runs `world` ranks (torchrun's rule)

  // Everything the children need is built before fork: after fork only async-signal-safe calls.
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const std::set<std::string> ours = {"RANK",        "WORLD_SIZE",  "LOCAL_RANK",      "LOCAL_WORLD_SIZE",
                                      "MASTER_ADDR", "MASTER_PORT", "ENGINE_LAUNCHER", "ENGINE_GPU"};
  std::vector<std::string> base_env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry(*e);
    if (!ours.contains(entry.substr(0, entry.find('=')))) base_env.push_back(entry);
  }
  const bool user_set_threads = std::any_of(base_env.begin(), base_env.end(), [](const std::string& e) {
    return e.starts_with("OMP_NUM_THREADS=");
  });
  if (!user_set_threads)
    base_env.push_back(
        fmt::format("OMP_NUM_THREADS={}", threads_per_worker(world, std::thread::hardware_concurrency())));
  std::vector<std::vector<std::string>> envs(static_cast<std::size_t>(world));
  for (int r = 0; r < world; ++r) {
    std::vector<std::string>& env = envs[static_cast<std::size_t>(r)];
    env = base_env;
    env.push_back(fmt::format("RANK={}", first_rank + r));
    env.push_back(fmt::format("WORLD_SIZE={}", world * options.nnodes));
    env.push_back(fmt::format("LOCAL_RANK={}", r));
    env.push_back(fmt::format("LOCAL_WORLD_SIZE={}", world));
    env.push_back(fmt::format("MASTER_ADDR={}", options.master_addr));
    env.push_back(fmt::format("MASTER_PORT={}", port));
    env.emplace_back("ENGINE_LAUNCHER=1");
    if (!options.gpus.empty())
      env.push_back(fmt::format("ENGINE_GPU={}", options.gpus[static_cast<std::size_t>(r)]));
    for (const auto& [k, v] : options.extra_env) env.push_back(k + "=" + v);
  }

  const std::string oom_score_adj = worker_oom_score_adj();  // a rank, not the launcher, for the OOM killer

  std::vector<Worker> workers(static_cast<std::size_t>(world));
  std::vector<WorkerStream> streams;
  auto kill_all = [&](int sig) {
    for (Worker& w : workers)
      if (w.running) ::kill(w.pid, sig);
  };
  auto reap = [&](bool block) {
    for (Worker& w : workers) {
      if (!w.running) continue;
      int status = 0;
      const pid_t r = ::waitpid(w.pid, &status, block ? 0 : WNOHANG);
      if (r == w.pid) {
        w.running = false;
        w.status = status;
      }
    }
  };

  for (int r = 0; r < world; ++r) {
    int out[2], err[2];
    ENGINE_CHECK(::pipe2(out, O_CLOEXEC) == 0 && ::pipe2(err, O_CLOEXEC) == 0,
                 "launch_workers: pipe failed: {}", std::strerror(errno));
    std::vector<char*> envp;
    for (const std::string& e : envs[static_cast<std::size_t>(r)])
      envp.push_back(const_cast<char*>(e.c_str()));
    envp.push_back(nullptr);
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGTERM);
      if (::getppid() != parent) ::_exit(1);  // the launcher died before the prctl
      // A process group of its own: Ctrl-C at a terminal reaches the launcher alone, which forwards it once
      // (the workers would otherwise get it twice: a first signal saves, a second exits at once).
      ::setpgid(0, 0);
      set_own_oom_score_adj(oom_score_adj);
      ::dup2(out[1], 1);
      ::dup2(err[1], 2);
      ::execve(options.executable.c_str(), args.data(), envp.data());
      const char msg[] = "launch_workers: execve failed\n";
      [[maybe_unused]] const ssize_t ignored = ::write(2, msg, sizeof(msg) - 1);
      ::_exit(127);
    }
    ::close(out[1]);
    ::close(err[1]);
    if (pid < 0) {
      const int e = errno;
      ::close(out[0]);
      ::close(err[0]);
      kill_all(SIGKILL);
      reap(true);
      for (WorkerStream& s : streams) ::close(s.fd);
      ENGINE_FAIL("launch_workers: fork of rank {} failed: {}", r, std::strerror(e));
    }
    Worker& w = workers[static_cast<std::size_t>(r)];
    w = Worker{first_rank + r, pid, out[0], err[0], true, 0};
    streams.push_back({out[0], first_rank + r, false, {}});
    streams.push_back({err[0], first_rank + r, true, {}});
  }
  std::thread reader(pump_output, std::move(streams), options.log_all_ranks);

  LaunchResult result;
  const std::optional<OomKills> oom_before =
      read_oom_kills();  // a SIGKILL then may be the kernel's OOM killer
  // A stop signal to the launcher (Ctrl-C, Slurm's or torchrun's SIGTERM) is forwarded to every worker, each
  // time it comes: the first lets the ranks save and stop together (apps/train/stop_signal.h), a second makes
  // them exit at once. Meanwhile a rank that ends is not a failure to act on: the others are stopping too,
  // and killing one that is still writing its checkpoint would lose it.
  const StopSignalForwarding forwarding;
  int forwarded = 0;
  // Failures before the launcher stops anyone are the workers' own; the likelier cause among them is named
  // first: a signal (a killed rank makes its peers fail a moment later), then any status but the
  // peer-failure status (a worker's way to say its process group failed because of another rank), then that.
  // The launcher waits up to `settle` after the first failure before stopping anyone: the rank that caused a
  // peer failure may still be on its way out, and the peers of a rank that failed on its own usually notice
  // the broken group at once and exit by themselves, so the report lists every rank's own status.
  auto cause_rank = [&](const Worker& w) {
    if (WIFSIGNALED(w.status)) return 0;
    return WEXITSTATUS(w.status) == options.peer_failure_status ? 2 : 1;
  };
  std::vector<const Worker*> failures;  // in the order they were reaped
  Clock::time_point first_failure{}, kill_deadline{}, stopped_since{};
  bool terminating = false;
  for (;;) {
    reap(false);
    if (const int got = g_stop_signals.load(); got > forwarded) {
      forwarded = got;
      kill_all(g_last_stop_signal.load());
    }
    bool any_running = false;
    for (const Worker& w : workers) {
      any_running = any_running || w.running;
      const bool failed = !w.running && !(WIFEXITED(w.status) && WEXITSTATUS(w.status) == 0);
      if (failed && !terminating && std::find(failures.begin(), failures.end(), &w) == failures.end()) {
        if (failures.empty()) first_failure = Clock::now();
        failures.push_back(&w);
      }
    }
    if (!failures.empty() && !terminating && forwarded == 0) {
      const auto best =
          std::min_element(failures.begin(), failures.end(),
                           [&](const Worker* a, const Worker* b) { return cause_rank(*a) < cause_rank(*b); });
      if (!any_running || Clock::now() - first_failure >= options.settle) {
        const Worker& cause = **best;
        result.failed_rank = cause.rank;
        result.exit_code = exit_code_of(cause.status);
        result.message =
            fmt::format("rank {} (pid {}) {}", cause.rank, cause.pid, describe_status(cause.status));
        if (WIFSIGNALED(cause.status) && WTERMSIG(cause.status) == SIGKILL)
          result.message += oom_kill_note(oom_before);
        for (const Worker* w : failures) {
          if (w != &cause)
            result.message += fmt::format("; then rank {} {}", w->rank, describe_status(w->status));
        }
        // No rank died of a signal: the one that did not answer may be among those still running. A stopped
        // one (SIGSTOP, a debugger) is the cause: named first, as a killed one would be (scripts/faults.sh
        // found the stopped rank unnamed, its peers' timeouts reported as the failure).
        if (cause_rank(cause) > 0) {
          for (const Worker& w : workers) {
            if (!w.running || !is_stopped(w.pid)) continue;
            result.message = fmt::format(
                "rank {} (pid {}) was stopped (SIGSTOP or a debugger) and its peers "
                "timed out waiting for it: {}",
                w.rank, w.pid, result.message);
            result.failed_rank = w.rank;
            break;
          }
        }
        terminating = true;
        kill_all(SIGTERM);
        kill_deadline = Clock::now() + options.grace;
      }
    }
    if (failures.empty() && !terminating && forwarded == 0) {
      // Every rank still running is stopped and the others exited 0: nobody's timeout will name it (found
      // by scripts/faults.sh's rank-stop: a rank stopped after its last collective left the launcher
      // waiting for ever). Past stopped_limit it is the failure.
      const Worker* stopped = nullptr;
      bool others_done = false, only_stopped = true;
      for (const Worker& w : workers) {
        if (!w.running)
          others_done = true;
        else if (is_stopped(w.pid))
          stopped = stopped != nullptr ? stopped : &w;
        else
          only_stopped = false;
      }
      if (stopped == nullptr || !others_done || !only_stopped) {
        stopped_since = {};
      } else if (stopped_since == Clock::time_point{}) {
        stopped_since = Clock::now();
      } else if (Clock::now() - stopped_since >= options.stopped_limit) {
        result.failed_rank = stopped->rank;
        result.exit_code = 128 + SIGKILL;
        result.message = fmt::format(
            "rank {} (pid {}) was stopped (SIGSTOP or a debugger) for {} s after "
            "every other rank had finished: killed",
            stopped->rank, stopped->pid, std::chrono::duration<double>(options.stopped_limit).count());
        terminating = true;
        kill_all(SIGKILL);  // a stopped process acts on no other signal
      }
    }
    if (!any_running) break;
    if (terminating && Clock::now() >= kill_deadline) kill_all(SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  reader.join();
  if (forwarded > 0) {  // stopped on request: report the first rank that did not exit 0 (rank 0 saves)
    for (const Worker& w : workers) {
      if (WIFEXITED(w.status) && WEXITSTATUS(w.status) == 0) continue;
      result.failed_rank = w.rank;
      result.exit_code = exit_code_of(w.status);
      result.message = fmt::format("rank {} (pid {}) {}", w.rank, w.pid, describe_status(w.status));
      write_all(2, fmt::format("launcher: stopped by signal {} (forwarded to every rank); {}\n",
                               g_last_stop_signal.load(), result.message));
      return result;
    }
    return result;
  }
  if (result.failed_rank >= 0) {
    write_all(2, fmt::format("launcher: {}; the other ranks were stopped\n", result.message));
  }
  return result;
}

}  // namespace engine::dist
