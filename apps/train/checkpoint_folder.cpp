#include "apps/train/checkpoint_folder.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <string_view>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"

namespace engine::apps {

namespace {

// "epoch12.safetensors" for prefix "epoch": the prefix, one or more digits, the extension.
bool numbered(std::string_view name, std::string_view prefix) {
  constexpr std::string_view kExtension = ".safetensors";
  if (!name.starts_with(prefix) || !name.ends_with(kExtension)) return false;
  const std::string_view digits = name.substr(prefix.size(), name.size() - prefix.size() - kExtension.size());
  return !digits.empty() && std::all_of(digits.begin(), digits.end(),
                                        [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}

}  // namespace

std::vector<std::string> run_checkpoints_in(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code error;
  if (dir.empty() || !std::filesystem::is_directory(dir, error)) return names;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    const std::string name = entry.path().filename().string();
    if (name == "last.safetensors" || numbered(name, "epoch") || numbered(name, "step"))
      names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

void check_new_run_folder(const TrainConfig& c) {
  if (c.checkpoint_dir.empty() || !c.resume.empty() || !c.eval_only.empty() || c.overwrite) return;
  const std::vector<std::string> held = run_checkpoints_in(c.checkpoint_dir);
  if (held.empty()) return;
  const std::size_t shown = std::min<std::size_t>(held.size(), 3);
  ENGINE_FAIL(
      "--checkpoint-dir '{}' holds the checkpoints of an earlier run ({}{}): continue that run with --resume "
      "auto, replace its checkpoints with --overwrite, or give another --checkpoint-dir",
      c.checkpoint_dir, fmt::join(held.begin(), held.begin() + static_cast<std::ptrdiff_t>(shown), ", "),
      held.size() > shown ? fmt::format(" and {} more", held.size() - shown) : std::string());
}

void remove_run_checkpoints(const std::string& dir) {
  for (const std::string& name : run_checkpoints_in(dir)) {
    const std::filesystem::path path = std::filesystem::path(dir) / name;
    std::error_code error;
    std::filesystem::remove(path, error);
    ENGINE_CHECK(!error, "--overwrite: cannot remove {}: {}", path.string(), error.message());
  }
}

}  // namespace engine::apps
