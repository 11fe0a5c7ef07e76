#pragma once
// Predictor: a model rebuilt from a cnn_train checkpoint (its metadata names the model and the dataset), run
// on the CPU in eval mode on one image file at a time. What cnn_predict prints is this class's output.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "layers/model.h"

namespace engine::apps {

class Predictor {
 public:
  // `class_names_csv` overrides the dataset's class names ("" keeps them). Throws engine::Error naming the
  // checkpoint for a missing or corrupt file, a file without cnn_train metadata, or a wrong class count.
  Predictor(const std::string& checkpoint, const std::string& class_names_csv);
  ~Predictor();

  // Softmax probabilities of every class for the image at `path`, decoded and converted to the model's input
  // (size, channels): by the checkpoint's evaluation transform where it records one (a folder dataset's
  // Resize + CenterCrop, apps/train/eval_transform.h), else resized to the model's input. `conversion`
  // receives what was converted ("a.png is 32x32 RGB; the model takes 28x28 grey: converted (resized, colour
  // to grey)"), or "" when the file is the model's input as it is.
  std::vector<float> classify(const std::string& path, std::string* conversion = nullptr);
  std::string class_name(std::size_t c) const;
  // The model with the checkpoint's weights (cnn_export_onnx writes it), and the input normalization.
  const layers::Model& model() const { return *model_; }
  const std::vector<float>& mean() const { return mean_; }
  const std::vector<float>& std() const { return std_; }

 private:
  std::unique_ptr<layers::Model> model_;
  std::vector<std::string> class_names_;
  std::vector<float> mean_, std_;
  int channels_ = 0, height_ = 0, width_ = 0;
  std::int64_t eval_resize_ = 0;  // the recorded Resize before CenterCrop(height_); 0: none recorded
};

}  // namespace engine::apps
