#include "dist/worker_output.h"

#include <cerrno>
#include <poll.h>
#include <unistd.h>

#include <fmt/format.h>

namespace engine::dist {

void write_all(int fd, const std::string& s) {
  const char* p = s.data();
  std::size_t n = s.size();
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    p += w;
    n -= static_cast<std::size_t>(w);
  }
}

void pump_output(std::vector<WorkerStream> streams, bool log_all_ranks) {
  auto emit = [&](const WorkerStream& s, const std::string& line) {
    if (s.is_stderr) {
      write_all(2, fmt::format("[rank {}] {}", s.rank, line));
    } else if (s.rank == 0 && !log_all_ranks) {
      write_all(1, line);
    } else if (log_all_ranks) {
      write_all(1, fmt::format("[rank {}] {}", s.rank, line));
    }
  };
  std::size_t open = streams.size();
  char buf[4096];
  while (open > 0) {
    std::vector<pollfd> fds;
    std::vector<WorkerStream*> owners;
    for (WorkerStream& s : streams) {
      if (s.fd < 0) continue;
      fds.push_back({s.fd, POLLIN, 0});
      owners.push_back(&s);
    }
    if (::poll(fds.data(), fds.size(), 500) <= 0) continue;
    for (std::size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      WorkerStream& s = *owners[i];
      const ssize_t n = ::read(s.fd, buf, sizeof(buf));
      if (n > 0) {
        s.pending.append(buf, static_cast<std::size_t>(n));
        std::size_t nl;
        while ((nl = s.pending.find('\n')) != std::string::npos) {
          emit(s, s.pending.substr(0, nl + 1));
          s.pending.erase(0, nl + 1);
        }
      } else if (n == 0 || errno != EINTR) {
        if (!s.pending.empty()) emit(s, s.pending + "\n");
        ::close(s.fd);
        s.fd = -1;
        --open;
      }
    }
  }
}

}  // namespace engine::dist
