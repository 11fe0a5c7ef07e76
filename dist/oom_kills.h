#pragma once
// The kernel's out-of-memory kills in this process's memory cgroup, so the launcher can say that a rank
// ended by SIGKILL was the OOM killer's (a memory limit: Slurm's, a container's, systemd's) and not kill -9.
// cgroup v2 counts them in memory.events ("oom_kill N", the group's and every group's below it), v1 in each
// group's own memory.oom_control (read here for the group and every group below it). Without a memory
// cgroup to read (not Linux, no cgroupfs mounted), nothing is said. The limit of this: a rank may move into
// any group below the launcher's, so with cgroup v1 an OOM kill of another process in a group below it, while
// the rank lived, is taken for the rank's too (only when that rank died of SIGKILL).

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace engine::dist {

// oom_kill of each memory cgroup read: this process's, and with cgroup v1 the groups below it.
struct OomKills {
  std::map<std::string, std::int64_t> count_of;  // by folder, e.g. /sys/fs/cgroup/memory/slurm/job_42
  int version = 0;                               // cgroup 1 or 2
};

// The counts now, or nothing when no memory cgroup can be read.
std::optional<OomKills> read_oom_kills();

// ": the kernel's out-of-memory killer (memory cgroup G: memory.max L, oom_kill count A -> B)" for the first
// group whose count rose since `before`, else "".
std::string oom_kill_note(const std::optional<OomKills>& before);

// The oom_score_adj a worker starts with: the launcher's own plus 500, at most 1000. Under a memory limit the
// kernel kills the process of the highest score, which while the ranks start can be the launcher (it may be
// the largest then), and a killed launcher names nothing; raised this way a rank is picked, and the launcher
// says so. Raising needs no privilege (lowering would). "" where /proc is not there to read.
std::string worker_oom_score_adj();

// Writes `value` to /proc/self/oom_score_adj; only async-signal-safe calls (it runs between fork and exec).
// A failure leaves the worker at the launcher's value: nothing worse than before.
void set_own_oom_score_adj(const std::string& value) noexcept;

}  // namespace engine::dist
