#include "apps/predict.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "apps/train/eval_transform.h"
#include "core/error.h"
#include "data/disk_images.h"
#include "data/file_io.h"
#include "data/image_codec.h"
#include "layers/models.h"
#include "layers/onnx/onnx_model.h"
#include "optim/checkpoint.h"

namespace engine::apps {

namespace {

std::vector<std::string> split_csv(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) out.push_back(item);
  return out;
}

const char* channels_name(int channels) {
  switch (channels) {
    case 1: return "grey";
    case 2: return "grey+alpha";
    case 3: return "RGB";
    default: return "RGBA";
  }
}

// What the decoding changes to give the model its input, or "" when nothing. eval_resize > 0: the
// checkpoint's Resize(eval_resize) + CenterCrop(height), else a resize to height x width.
std::string describe_conversion(const std::string& path, const data::ImageInfo& file, int channels,
                                int height, int width, std::int64_t eval_resize) {
  std::vector<std::string> changes;
  if (eval_resize > 0 && (eval_resize != height || file.height != height || file.width != width)) {
    changes.push_back(fmt::format("Resize({}) + CenterCrop({}), the checkpoint's evaluation transform",
                                  eval_resize, height));
  } else if (file.height != height || file.width != width) {
    changes.emplace_back("resized");
  }
  const bool file_colour = file.channels >= 3, file_alpha = file.channels == 2 || file.channels == 4;
  if (file_colour && channels == 1) changes.emplace_back("colour to grey");
  if (!file_colour && channels >= 3) changes.emplace_back("grey copied to the colour channels");
  if (file_alpha && channels != 4) changes.emplace_back("transparency dropped");
  if (changes.empty()) return {};
  return fmt::format("{} is {}x{} {}; the model takes {}x{} {}: converted ({})", path, file.width,
                     file.height, channels_name(file.channels), width, height, channels_name(channels),
                     fmt::join(changes, ", "));
}

}  // namespace

Predictor::Predictor(const std::string& checkpoint, const std::string& class_names_csv) {
  const optim::SafetensorsFile file = optim::SafetensorsFile::read(checkpoint);
  const auto& meta = file.metadata();
  for (const char* key : {"model", "channels", "height", "width", "class_names", "mean", "std"}) {
    ENGINE_CHECK(meta.count(key) == 1, "checkpoint '{}' has no cnn_train metadata '{}'", checkpoint, key);
  }
  try {
    channels_ = std::stoi(meta.at("channels"));
    height_ = std::stoi(meta.at("height"));
    width_ = std::stoi(meta.at("width"));
    for (const std::string& v : split_csv(meta.at("mean"))) mean_.push_back(std::stof(v));
    for (const std::string& v : split_csv(meta.at("std"))) std_.push_back(std::stof(v));
  } catch (const std::exception&) {
    ENGINE_FAIL("checkpoint '{}': malformed input metadata", checkpoint);
  }
  const std::vector<std::string> trained = split_csv(meta.at("class_names"));
  class_names_ = class_names_csv.empty() ? trained : split_csv(class_names_csv);
  // Said here, not by the checkpoint load below, which would name the last layer's shape instead.
  ENGINE_CHECK(class_names_.size() == trained.size(),
               "--classes '{}' names {} classes; checkpoint '{}' was trained on {} ({})", class_names_csv,
               class_names_.size(), checkpoint, trained.size(), fmt::join(trained, ", "));
  ENGINE_CHECK(static_cast<int>(mean_.size()) == channels_ && static_cast<int>(std_.size()) == channels_,
               "checkpoint '{}': mean/std for {} channels", checkpoint, channels_);
  // An ONNX model's graph is read from its file (cnn_train records its absolute path).
  ENGINE_CHECK(
      !layers::onnx::is_onnx_path(meta.at("model")) || std::filesystem::exists(meta.at("model")),
      "checkpoint '{}' holds the weights of the ONNX model '{}', whose graph is read from that file, "
      "and it is not there: put the .onnx file back at that path{}",
      checkpoint, meta.at("model"),
      std::filesystem::path(meta.at("model")).is_absolute()
          ? ""
          : " (relative to the folder it was trained in: an older cnn_train recorded the path as given)");
  const EvalGeometry geometry = recorded_eval_geometry(meta, checkpoint);
  ENGINE_CHECK(!geometry.recorded() || (geometry.crop == height_ && geometry.crop == width_),
               "checkpoint '{}': evaluation crop {} but input {}x{}", checkpoint, geometry.crop, height_,
               width_);
  eval_resize_ = geometry.resize;
  const bool new_head = meta.count("new_head") == 1 && meta.at("new_head") == "1";  // cnn_train --new-head
  model_ = std::make_unique<layers::Model>(layers::build_model(
      meta.at("model"), channels_, static_cast<int>(class_names_.size()), height_, width_, {}, new_head));
  model_->finalize(layers::ExecutionContext{}, 0);
  optim::load_checkpoint(checkpoint, *model_, nullptr);
}

Predictor::~Predictor() = default;

std::vector<float> Predictor::classify(const std::string& path, std::string* conversion) {
  const std::vector<std::uint8_t> bytes = data::read_file(path);
  const data::ImageInfo file = data::image_info(bytes, path);
  data::Image image;
  if (eval_resize_ > 0) {
    image = data::Image{channels_, height_, width_,
                        std::vector<std::uint8_t>(static_cast<std::size_t>(channels_) * height_ * width_)};
    data::decode_center_crop(bytes, path, channels_, eval_resize_, height_, /*dct_scaling=*/true,
                             image.pixels.data());
  } else {
    image = data::decode_image(bytes, path, channels_, height_, width_);
  }
  if (conversion != nullptr)
    *conversion = describe_conversion(path, file, channels_, height_, width_, eval_resize_);
  Tensor x = Tensor::empty({1, channels_, height_, width_}, DType::F32);
  float* dst = x.data<float>();
  const std::int64_t plane = static_cast<std::int64_t>(height_) * width_;
  for (std::int64_t i = 0; i < channels_ * plane; ++i) {
    const std::size_t c = static_cast<std::size_t>(i / plane);
    dst[i] = (static_cast<float>(image.pixels[static_cast<std::size_t>(i)]) / 255.0f - mean_[c]) / std_[c];
  }
  const Tensor logits = model_->forward(x, layers::Mode::Eval);
  std::vector<float> p(logits.data<float>(), logits.data<float>() + logits.numel());
  const float top = *std::max_element(p.begin(), p.end());
  double sum = 0.0;
  for (float& v : p) {
    v = std::exp(v - top);
    sum += static_cast<double>(v);
  }
  for (float& v : p) v = static_cast<float>(static_cast<double>(v) / sum);
  return p;
}

std::string Predictor::class_name(std::size_t c) const {
  return c < class_names_.size() ? class_names_[c] : "?";
}

}  // namespace engine::apps
