#pragma once
// Helpers for the checkpoint tests: a small model with BatchNorm trained a few SGD steps (so parameters,
// running statistics, num_batches_tracked and momentum all hold non-initial values), fresh temporary folders,
// and the raw bytes of a tensor.

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <unistd.h>
#include <vector>

#include "layers/model.h"
#include "layers/softmax_cross_entropy.h"
#include "optim/sgd.h"
#include "tests/common/scratch_dirs.h"
#include "tests/cpu/layer_test_util.h"

namespace engine::optim::testing {

struct TrainedModel {
  std::unique_ptr<layers::Model> model;
  std::unique_ptr<Sgd> sgd;
};

inline TrainedModel trained_model(std::uint64_t seed, int steps, const char* name = "small_net") {
  TrainedModel t;
  t.model = std::make_unique<layers::Model>(name, layers::testing::small_test_net(), Shape{3, 8, 8});
  t.model->finalize(layers::testing::cpu_context(DType::F32, seed), seed);
  t.sgd = std::make_unique<Sgd>(*t.model, SgdConfig{.momentum = 0.9, .weight_decay = 5e-4});
  const Tensor x = layers::testing::random_tensor({6, 3, 8, 8}, DType::F32, seed + 100);
  const Tensor labels = layers::testing::random_labels(6, 3, seed + 200);
  layers::SoftmaxCrossEntropy loss;
  for (int s = 0; s < steps; ++s) {
    loss.forward(t.model->context(), t.model->forward(x, layers::Mode::Train), labels);
    t.model->backward(loss.backward());
    t.sgd->step(0.1);
  }
  return t;
}

inline std::string fresh_dir(const std::string& name) {
  return engine::testing::scratch_dir("cnn_engine_ckpt_", name).string();
}

inline std::vector<std::uint8_t> host_bytes_of(const Tensor& t) {
  const Tensor h = t.to(Device::cpu());
  std::vector<std::uint8_t> out(h.nbytes());
  std::memcpy(out.data(), h.raw_data(), out.size());
  return out;
}

}  // namespace engine::optim::testing
