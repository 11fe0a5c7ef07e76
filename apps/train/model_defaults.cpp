#include "apps/train/model_defaults.h"

#include <fmt/format.h>

#include "core/error.h"
#include "layers/onnx/onnx_model.h"

namespace engine::apps {

const std::vector<ModelDefaults>& model_defaults_table() {
  // From short CPU runs (CIFAR-10's first 4000 training images, 1000 test images, 2-3 epochs):
  static const std::vector<ModelDefaults> table = {
      // VGG-style nets whose 4096 -> 512 classifier has no normalization: at 0.1 cnn3 stays at chance (10.6%
      // test accuracy after 3 epochs) and vgg6 near it (18.8% after 2); at 0.02 they learn (cnn3 0.01: 44.5%,
      // 0.03: 42.5%; vgg6 0.02: 38.3%).
      {.model = "vgg6", .batch_size = 128, .lr = 0.02},
      {.model = "cnn3", .batch_size = 128, .lr = 0.02},
      // PyTorch's MNIST example net: small batches learn most from one epoch of a few thousand images (the CI
      // acceptance run: 2000 Fashion-MNIST images, one epoch, at least 70%).
      {.model = "mnist_cnn", .batch_size = 16, .lr = 0.015},
      // kuangliu/pytorch-cifar's setting for its ResNet18 (BatchNorm everywhere, a 512 -> 10 head).
      {.model = "resnet18", .batch_size = 128, .lr = 0.1},
      // airbench94's net outside its recipe (which sets batch 1024, lr 1.5 and much else): 0.1 44.1%, 0.02
      // 38.2% after 2 epochs.
      {.model = "airbench", .batch_size = 128, .lr = 0.1},
  };
  return table;
}

const ModelDefaults& model_defaults(std::string_view model) {
  // A model from an ONNX file: nothing is known of it, so the settings of the most common CIFAR recipe
  // (batch 128 and lr 0.1, ResNet's); --batch-size and --lr are the user's to tune.
  static const ModelDefaults onnx_file = {.model = "an ONNX file", .batch_size = 128, .lr = 0.1};
  if (layers::onnx::is_onnx_path(model)) return onnx_file;
  for (const ModelDefaults& d : model_defaults_table()) {
    if (d.model == model) return d;
  }
  std::string known;
  for (const ModelDefaults& d : model_defaults_table())
    known += (known.empty() ? "" : ", ") + std::string(d.model);
  ENGINE_FAIL("no defaults for model '{}': expected one of {}", model, known);
}

std::string model_defaults_help(std::string (*field)(const ModelDefaults&)) {
  std::string out;
  for (const ModelDefaults& d : model_defaults_table()) {
    out += fmt::format("{}{} for {}", out.empty() ? "" : ", ", field(d), d.model);
  }
  return out;
}

}  // namespace engine::apps
