#pragma once
// Helpers for the tests that stop, kill and restart cnn_train (and torchrun, mpirun) while it runs: a child
// process whose combined output is read line by line as it comes, so a test can act at a known point of the
// run ("after the first mid-epoch checkpoint") and then collect the rest.

#include <chrono>
#include <cstdlib>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <poll.h>
#include <signal.h>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace engine::apps::testing {

class LiveProcess {
 public:
  // Runs `argv` (argv[0] looked up in PATH) with stdout and stderr into one pipe. `env` entries
  // ("NAME=value") are added to this process's environment. The child leads its own process group, so a
  // test can signal it (and, for launchers, everything it started) without touching the test itself.
  explicit LiveProcess(const std::vector<std::string>& argv, const std::vector<std::string>& env = {}) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return;
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    pid_ = ::fork();
    if (pid_ == 0) {
      ::setpgid(0, 0);
      ::dup2(fds[1], 1);
      ::dup2(fds[1], 2);
      for (const std::string& e : env) ::putenv(const_cast<char*>(e.c_str()));
      ::execvp(args[0], args.data());
      ::_exit(127);
    }
    ::close(fds[1]);
    fd_ = fds[0];
  }
  ~LiveProcess() {
    if (pid_ > 0 && !reaped_) {
      ::kill(-pid_, SIGKILL);
      ::kill(pid_, SIGKILL);
      int status = 0;
      ::waitpid(pid_, &status, 0);
    }
    if (fd_ >= 0) ::close(fd_);
  }
  LiveProcess(const LiveProcess&) = delete;
  LiveProcess& operator=(const LiveProcess&) = delete;

  pid_t pid() const { return pid_; }
  const std::string& output() const { return output_; }

  // Reads until `text` appears in the output (true) or the process closes its output or `seconds` pass.
  bool wait_for(const std::string& text, double seconds) {
    const auto deadline =
        std::chrono::steady_clock::now() +
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::duration<double>(seconds));
    while (output_.find(text) == std::string::npos) {
      if (!read_some(deadline)) return false;
    }
    return true;
  }

  // Reads everything until the process closes its output, then returns its exit code (128 + signal when
  // killed), or -1 when it is still running after `seconds` (it is then killed).
  int finish(double seconds) {
    const auto deadline =
        std::chrono::steady_clock::now() +
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::duration<double>(seconds));
    while (read_some(deadline)) {
    }
    int status = 0;
    for (;;) {
      const pid_t r = ::waitpid(pid_, &status, WNOHANG);
      if (r == pid_) break;
      if (std::chrono::steady_clock::now() >= deadline) return -1;  // the destructor kills it
      ::usleep(20000);
    }
    reaped_ = true;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

  // True while the process runs (not yet exited: /proc shows it, and not as a zombie).
  bool running() const {
    std::ifstream status("/proc/" + std::to_string(pid_) + "/status");
    std::string line;
    while (std::getline(status, line)) {
      if (line.rfind("State:", 0) == 0) return line.find('Z') == std::string::npos;
    }
    return false;
  }

  void signal(int sig) const { ::kill(pid_, sig); }

 private:
  bool read_some(std::chrono::steady_clock::time_point deadline) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0 || fd_ < 0) return false;
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
    char buffer[4096];
    const ssize_t n = ::read(fd_, buffer, sizeof buffer);
    if (n <= 0) return false;
    output_.append(buffer, static_cast<std::size_t>(n));
    return true;
  }

  pid_t pid_ = -1;
  int fd_ = -1;
  bool reaped_ = false;
  std::string output_;
};

// The children of `pid` (from /proc), e.g. the workers torchrun started.
inline std::vector<pid_t> child_pids(pid_t pid) {
  std::vector<pid_t> out;
  std::ifstream children("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/children");
  for (pid_t c; children >> c;) out.push_back(c);
  return out;
}

}  // namespace engine::apps::testing
