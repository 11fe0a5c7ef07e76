#include "dist/oom_kills.h"

#include <algorithm>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <system_error>
#include <unistd.h>

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

std::string first_word(const std::string& file) {
  std::ifstream in(file);
  std::string word;
  in >> word;
  return word.empty() ? "?" : word;
}

// cgroup v1 counts a kill only in the victim's own group: the group's count and every group's below it.
void read_v1_tree(const std::string& group, OomKills& out) {
  if (const auto n = keyed_value(group + "/memory.oom_control", "oom_kill")) out.count_of[group] = *n;
  std::error_code ec;
  for (const auto& e : std::filesystem::recursive_directory_iterator(group, ec)) {
    if (!e.is_directory(ec)) continue;
    const std::string below = e.path().string();
    if (const auto n = keyed_value(below + "/memory.oom_control", "oom_kill")) out.count_of[below] = *n;
  }
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
    OomKills out;
    if (controllers == "memory" || controllers.find("memory,") != std::string::npos ||
        controllers.find(",memory") != std::string::npos) {
      out.version = 1;
      read_v1_tree("/sys/fs/cgroup/memory" + path, out);
    } else if (controllers.empty()) {
      out.version = 2;
      for (const std::string root : {"/sys/fs/cgroup", "/sys/fs/cgroup/unified"}) {
        const std::string group = root + path;
        if (const auto n = keyed_value(group + "/memory.events", "oom_kill")) out.count_of[group] = *n;
        if (!out.count_of.empty()) break;
      }
    }
    if (!out.count_of.empty()) return out;
  }
  return std::nullopt;
}

std::string oom_kill_note(const std::optional<OomKills>& before) {
  if (!before) return "";
  const std::optional<OomKills> now = read_oom_kills();
  if (!now) return "";
  for (const auto& [group, count] : now->count_of) {
    const auto was = before->count_of.find(group);
    const std::int64_t earlier = was == before->count_of.end() ? 0 : was->second;
    if (count <= earlier) continue;
    const char* limit = now->version == 1 ? "memory.limit_in_bytes" : "memory.max";
    return fmt::format(
        ": the kernel's out-of-memory killer (memory cgroup {}: {} {}, oom_kill count {} -> {})", group,
        limit, first_word(group + "/" + limit), earlier, count);
  }
  return "";
}

std::string worker_oom_score_adj() {
  std::ifstream in("/proc/self/oom_score_adj");
  int own = 0;
  if (!(in >> own)) return "";
  return std::to_string(std::min(own + 500, 1000));
}

void set_own_oom_score_adj(const std::string& value) noexcept {
  if (value.empty()) return;
  const int fd = ::open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
  if (fd < 0) return;
  [[maybe_unused]] const ssize_t ignored = ::write(fd, value.data(), value.size());
  ::close(fd);
}

}  // namespace engine::dist
