#pragma once
// The launcher's relay of its workers' output (dist/launcher.cpp): each worker's stdout and stderr pipes read
// until closed, whole lines written with the rank's tag, so lines of different ranks never interleave.

#include <string>
#include <vector>

namespace engine::dist {

// One pipe and its line-assembling buffer.
struct WorkerStream {
  int fd;
  int rank;
  bool is_stderr;
  std::string pending;
};

// Writes all of `s` to `fd`, retrying short writes and EINTR; gives up silently on an error (a closed
// terminal must not end the launcher).
void write_all(int fd, const std::string& s);

// Reads every stream until all are closed (and closes them): stderr lines as "[rank R] ...", rank 0's stdout
// as is, other ranks' stdout only with `log_all_ranks` (tagged).
void pump_output(std::vector<WorkerStream> streams, bool log_all_ranks);

}  // namespace engine::dist
