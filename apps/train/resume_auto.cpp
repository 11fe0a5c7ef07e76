#include "apps/train/resume_auto.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include <fmt/format.h>

#include "optim/checkpoint.h"

namespace engine::apps {

std::optional<ResumePoint> newest_checkpoint(const std::string& dir, std::vector<std::string>* notes) {
  std::error_code ec;
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.path().extension() == ".safetensors" && entry.is_regular_file())
      files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  std::optional<ResumePoint> best;
  for (const std::string& path : files) {
    try {
      const optim::SafetensorsFile file = optim::SafetensorsFile::read(path);
      const auto& meta = file.metadata();
      const auto format = meta.find("format");
      if (format == meta.end() || format->second != optim::kCheckpointFormat) continue;
      optim::verify_checkpoint_checksum(file);  // bytes changed on disk: skipped with a note, as unparsable
      const auto number = [&](const char* key) -> std::int64_t {
        const auto it = meta.find(key);
        return it == meta.end() ? 0 : std::stoll(it->second);
      };
      const ResumePoint p{path, number("epoch"), number("sampler_position"), number("step")};
      if (!best || std::pair(p.epoch, p.position) > std::pair(best->epoch, best->position)) best = p;
    } catch (const std::exception& e) {
      if (notes != nullptr) notes->push_back(fmt::format("--resume auto: skipping {}: {}", path, e.what()));
    }
  }
  return best;
}

}  // namespace engine::apps
