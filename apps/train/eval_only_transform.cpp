#include "apps/train/eval_only_transform.h"

#include <algorithm>

#include <fmt/format.h>

#include "apps/train/eval_transform.h"
#include "core/error.h"

namespace engine::apps {

namespace {

// The comma-separated floats of metadata[key]; empty when absent or malformed (then the dataset's own).
std::vector<float> floats_of(const std::map<std::string, std::string>& metadata, const char* key) {
  const auto it = metadata.find(key);
  std::vector<float> out;
  if (it == metadata.end()) return out;
  try {
    std::size_t start = 0;
    while (start <= it->second.size()) {
      const std::size_t comma = std::min(it->second.find(',', start), it->second.size());
      out.push_back(std::stof(it->second.substr(start, comma - start)));
      start = comma + 1;
    }
  } catch (const std::exception&) {
    return {};
  }
  return out;
}

}  // namespace

EvalOnlyTransform adopt_checkpoint_transform(TrainConfig& c, const std::string& checkpoint,
                                             const std::map<std::string, std::string>& metadata) {
  EvalOnlyTransform t;
  t.mean = floats_of(metadata, "mean");
  t.std = floats_of(metadata, "std");
  if (t.mean.empty() || t.mean.size() != t.std.size()) {
    t.mean.clear();
    t.std.clear();
  }
  const EvalGeometry g = recorded_eval_geometry(metadata, checkpoint);
  if (!g.recorded()) return t;
  ENGINE_CHECK(!c.image_size_given || c.image_size == g.crop,
               "--eval-only: --image-size {} disagrees with checkpoint '{}', whose model was evaluated on "
               "CenterCrop({}) after Resize({}): leave --image-size out to use the checkpoint's {}",
               c.image_size, checkpoint, g.crop, g.resize, g.crop);
  c.image_size = g.crop;
  if (c.resize_given && c.resize != g.resize) {
    t.note = fmt::format(
        "cnn_train: note: --eval-only: --resize {} instead of checkpoint '{}''s Resize({}) before "
        "CenterCrop({})",
        c.resize, checkpoint, g.resize, g.crop);
  } else {
    c.resize = g.resize;
  }
  return t;
}

}  // namespace engine::apps
