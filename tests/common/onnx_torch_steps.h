#pragma once
// The engine's side of the PyTorch checks of imported ONNX files (scripts/onnx_torch_check.py,
// scripts/zoo_table.py): a model finalized on the CPU in float32, its initial state ("state.<name>"), a
// batch (4 unless given; "in.x" in [-2, 2), "in.labels"), its inference logits ("out.logits") and its state
// after two SGD steps, lr 0.05, momentum 0.9, weight decay 5e-4 ("out.after.<name>"), written as safetensors.
// For studying a tensor's conditioning (docs/ZOO.md, mnasnet1_0): `steps` other than two, and `moved_seed` >=
// 0 moves each value of the batch by one float32 ulp, up or down by Philox(moved_seed) (the record's "in.x"
// is the moved batch), as scripts/zoo_table.py moves PyTorch's.

#include <cmath>
#include <cstdint>
#include <string>

#include "layers/model.h"
#include "layers/softmax_cross_entropy.h"
#include "optim/safetensors.h"
#include "optim/sgd.h"
#include "tests/common/safetensors_records.h"
#include "tests/cpu/layer_test_util.h"

namespace engine::testing {

inline void record_two_sgd_steps(layers::Model& m, const Shape& sample, int classes, const std::string& path,
                                 int batch_size = 4, int steps = 2, int moved_seed = -1) {
  Shape batch{batch_size};
  batch.insert(batch.end(), sample.begin(), sample.end());
  Tensor x = layers::testing::random_tensor(batch, DType::F32, 22, -2.0, 2.0);
  if (moved_seed >= 0) {
    float* v = x.data<float>();
    for (std::int64_t i = 0; i < x.numel(); ++i) {
      const bool up =
          (philox_word(static_cast<std::uint64_t>(moved_seed), 0x30fe, static_cast<std::uint64_t>(i)) & 1u) !=
          0;
      v[i] = std::nextafter(v[i], up ? INFINITY : -INFINITY);
    }
  }
  const Tensor labels = layers::testing::random_labels(batch_size, classes, 23);
  SafetensorsRecords r;
  r.add_state("state.", m);
  r.add("in.x", x);
  r.add("in.labels", labels);
  r.add("out.logits", m.forward(x, layers::Mode::Inference));
  layers::SoftmaxCrossEntropy loss;
  optim::Sgd sgd(m, optim::SgdConfig{.momentum = 0.9, .weight_decay = 5e-4});
  for (int step = 0; step < steps; ++step) {
    loss.forward(m.context(), m.forward(x, layers::Mode::Train), labels);
    m.backward(loss.backward());
    sgd.step(0.05);
  }
  r.add_state("out.after.", m);
  optim::write_safetensors(path, r.list, {});
}

}  // namespace engine::testing
