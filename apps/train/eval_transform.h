#pragma once
// The evaluation transform a checkpoint records (issue 42): a folder dataset's Resize(resize) of the shorter
// side and CenterCrop(crop), metadata "eval_resize" and "eval_crop", beside the normalization "mean" and
// "std" every cnn_train checkpoint holds. cnn_predict (apps/predict.h) and cnn_train --eval-only feed the
// model what its evaluation fed it, whatever their flags' defaults. A checkpoint without the geometry (older
// ones, and those of datasets held in memory at the model's size: CIFAR-10, MNIST) keeps the earlier
// behavior: the image resized to the model's input.
//
// Header-only parsing, so cnn_predict reads it without the training library.

#include <cstdint>
#include <map>
#include <string>

#include "core/error.h"

namespace engine::apps {

struct EvalGeometry {
  std::int64_t resize = 0;  // the shorter side before the crop
  std::int64_t crop = 0;    // the square the model sees; 0: nothing recorded
  bool recorded() const { return crop > 0; }
};

inline constexpr const char* kEvalResizeKey = "eval_resize";
inline constexpr const char* kEvalCropKey = "eval_crop";

// The geometry in `metadata` (of `checkpoint`, named in messages); {} when absent. Throws engine::Error for
// a malformed or inconsistent one.
inline EvalGeometry recorded_eval_geometry(const std::map<std::string, std::string>& metadata,
                                           const std::string& checkpoint) {
  const auto resize = metadata.find(kEvalResizeKey), crop = metadata.find(kEvalCropKey);
  if (resize == metadata.end() && crop == metadata.end()) return {};
  ENGINE_CHECK(resize != metadata.end() && crop != metadata.end(),
               "checkpoint '{}': metadata has one of '{}' and '{}' without the other", checkpoint,
               kEvalResizeKey, kEvalCropKey);
  EvalGeometry g;
  try {
    g.resize = std::stoll(resize->second);
    g.crop = std::stoll(crop->second);
  } catch (const std::exception&) {
    ENGINE_FAIL("checkpoint '{}': malformed evaluation transform '{}' / '{}'", checkpoint, resize->second,
                crop->second);
  }
  ENGINE_CHECK(g.crop > 0 && g.resize >= g.crop,
               "checkpoint '{}': evaluation transform Resize({}) + CenterCrop({}) is not one", checkpoint,
               g.resize, g.crop);
  return g;
}

}  // namespace engine::apps
