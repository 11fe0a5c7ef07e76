#pragma once
// The kernel's out-of-memory kills in this process's memory cgroup, so the launcher can say that a rank
// ended by SIGKILL was the OOM killer's (a memory limit: Slurm's, a container's, systemd's) and not kill -9.
// cgroup v2 counts them in memory.events ("oom_kill N", the group's and every group's below it), v1 in each
// group's memory.oom_control (summed here over the group and the groups below it). Without a memory cgroup to read (not Linux, no cgroupfs mounted),
// nothing is said.

#include <cstdint>
#include <optional>
#include <string>

namespace engine::dist {

struct OomKills {
  std::string group;      // the cgroup's folder, e.g. /sys/fs/cgroup/memory/slurm/job_42
  std::int64_t count = 0; // oom_kill in it so far
  std::string limit;      // "memory.max 536870912" (v2; or "max") or "memory.limit_in_bytes N" (v1)
};

// This process's memory cgroup and its OOM-kill count now, or nothing when it cannot be read.
std::optional<OomKills> read_oom_kills();

// ": the kernel's out-of-memory killer (memory cgroup G: memory.max L, oom_kill count A -> B)" when the count
// rose since `before`, else "".
std::string oom_kill_note(const std::optional<OomKills>& before);

}  // namespace engine::dist
