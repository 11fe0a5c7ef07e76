#include "apps/predict.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "core/error.h"
#include "data/image_codec.h"
#include "layers/models.h"
#include "optim/checkpoint.h"

namespace engine::apps {

namespace {

std::vector<std::string> split_csv(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) out.push_back(item);
  return out;
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
  class_names_ = split_csv(class_names_csv.empty() ? meta.at("class_names") : class_names_csv);
  ENGINE_CHECK(static_cast<int>(mean_.size()) == channels_ && static_cast<int>(std_.size()) == channels_,
               "checkpoint '{}': mean/std for {} channels", checkpoint, channels_);
  model_ = std::make_unique<layers::Model>(layers::build_model(
      meta.at("model"), channels_, static_cast<int>(class_names_.size()), height_, width_));
  model_->finalize(layers::ExecutionContext{}, 0);
  optim::load_checkpoint(checkpoint, *model_, nullptr);  // a wrong class count fails here, naming the tensor
}

Predictor::~Predictor() = default;

std::vector<float> Predictor::classify(const std::string& path) {
  const data::Image image = data::decode_image_file(path, channels_, height_, width_);
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
