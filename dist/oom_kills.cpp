#include "dist/oom_kills.h"

#include <filesystem>
#include <fstream>
#include <system_error>

#include <fmt/format.h>

namespace engine::dist {
namespace {

// The value after `key` in a "key value" file, or nothing.
std::optional<std::int64_t> keyed_value(const std::string& file, const std::string& key) {
  std::ifstream in(file);
  std::string k;
  std::int64_t v = 0;
  while (in >> k >> v) {
    if (k == key) return v;
  }
  return std::nullopt;
}

// cgroup v1 counts a kill only in the victim's own group: the group's and every group's below it, summed.
std::optional<std::int64_t> v1_kills_below(const std::string& group) {
  std::optional<std::int64_t> total = keyed_value(group + "/memory.oom_control", "oom_kill");
  if (!total) return total;
  std::error_code ec;
  for (const auto& e : std::filesystem::recursive_directory_iterator(group, ec)) {
    if (!e.is_directory(ec)) continue;
    if (const auto n = keyed_value(e.path().string() + "/memory.oom_control", "oom_kill")) *total += *n;
  }
  return total;
}

std::string first_word(const std::string& file) {
  std::ifstream in(file);
  std::string word;
  in >> word;
  return word;
}

}  // namespace

std::optional<OomKills> read_oom_kills() {
  // /proc/self/cgroup: "0::/path" (v2), "4:memory:/path" (v1's memory controller).
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  while (std::getline(in, line)) {
    const std::size_t a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    if (controllers == "memory" || controllers.find("memory,") != std::string::npos ||
        controllers.find(",memory") != std::string::npos) {
      const std::string group = "/sys/fs/cgroup/memory" + path;
      if (const auto n = v1_kills_below(group))
        return OomKills{group, *n, "memory.limit_in_bytes " + first_word(group + "/memory.limit_in_bytes")};
    } else if (controllers.empty()) {
      for (const std::string root : {"/sys/fs/cgroup", "/sys/fs/cgroup/unified"}) {
        const std::string group = root + path;
        if (const auto n = keyed_value(group + "/memory.events", "oom_kill"))
          return OomKills{group, *n, "memory.max " + first_word(group + "/memory.max")};
      }
    }
  }
  return std::nullopt;
}

std::string oom_kill_note(const std::optional<OomKills>& before) {
  if (!before) return "";
  const std::optional<OomKills> now = read_oom_kills();
  if (!now || now->group != before->group || now->count <= before->count) return "";
  return fmt::format(": the kernel's out-of-memory killer (memory cgroup {}: {}, oom_kill count {} -> {})",
                     now->group, now->limit, before->count, now->count);
}

}  // namespace engine::dist
