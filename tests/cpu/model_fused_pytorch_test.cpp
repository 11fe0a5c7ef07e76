// The zoo's float32 models as the engine trains them (BatchNorm+ReLU fused, each conv bias folded into the
// BatchNorm after it: layers/fusion.h) against PyTorch's unfused modules of docs/MODELS.md
// (scripts/fused_torch_check.py holds the tolerances' reasoning): one training forward from the same state
// and batch, the mean loss, the backward and one SGD step (momentum 0.9, weight decay 5e-4), and the
// BatchNorm running statistics it leaves. PyTorch applies the engine's dropout mask (the Dropout layer's mask
// regenerated from its seed and offset). The folded conv biases' gradients are the exact 0 here and float32
// noise around 0 in PyTorch. Skipped, saying how to enable it, where python3 cannot import torch (CI: torch
// is no dependency).

#include <cstdio>
#include <filesystem>
#include <string>
#include <unistd.h>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/ops/dropout.h"
#include "layers/dropout.h"
#include "layers/models.h"
#include "layers/softmax_cross_entropy.h"
#include "optim/safetensors.h"
#include "optim/sgd.h"
#include "tests/common/environment.h"
#include "tests/common/pytorch_tools.h"
#include "tests/common/safetensors_records.h"
#include "tests/cpu/layer_test_util.h"

namespace engine::layers {
namespace {

using testing::cpu_context;
using testing::random_labels;
using testing::random_tensor;

// The model's Dropout layers, depth first (the order their training forwards ran in).
void dropouts_of(Layer& layer, std::vector<const Dropout*>& out) {
  if (const auto* d = dynamic_cast<const Dropout*>(&layer)) out.push_back(d);
  for (const NamedChild& c : layer.children()) dropouts_of(*c.layer, out);
}

void check_against_pytorch(const std::string& name) {
  SKIP_WITHOUT_PYTHON_MODULES("torch", "safetensors.torch");  // scripts/fused_torch_check.py's imports
  const engine::testing::PyTorchTools& torch = engine::testing::pytorch_tools();
  constexpr std::int64_t kBatch = 4;
  constexpr double kLr = 0.05;
  Model m = build_model(name, 3, 10, 32, 32);  // fusion on: the default
  m.finalize(cpu_context(DType::F32), 21);
  const Tensor x = random_tensor({kBatch, 3, 32, 32}, DType::F32, 22, -2.0, 2.0);
  const Tensor labels = random_labels(kBatch, 10, 23);

  engine::testing::SafetensorsRecords r;
  r.add_state("state.", m);
  r.add("in.x", x);
  r.add("in.labels", labels);

  SoftmaxCrossEntropy loss;
  const Tensor logits = m.forward(x, Mode::Train);
  const Tensor l = loss.forward(m.context(), logits, labels);
  m.backward(loss.backward());
  r.add("out.logits", logits);
  r.add("out.loss", l);
  for (const Parameter& p : m.parameters()) r.add("out.grad." + p.name, p.grad);

  // Each Dropout's mask, scaled (0 or 1 / (1 - p)): its kernel on ones with the saved seed and offset.
  std::vector<const Dropout*> dropouts;
  dropouts_of(m.root(), dropouts);
  ASSERT_EQ(dropouts.size(), 1u) << name << ": the check's module has one Dropout (classifier.2)";
  const Tensor ones = Tensor::from_vector(std::vector<float>(kBatch * 512, 1.0f), {kBatch, 512});
  Tensor mask = Tensor::empty(ones.shape(), DType::F32);
  ops::dropout_forward(m.context(), dropouts[0]->p(), dropouts[0]->last_seed(), dropouts[0]->last_offset(),
                       ones, mask);
  r.add("in.dropout_mask", mask);

  optim::Sgd sgd(m, optim::SgdConfig{.momentum = 0.9, .weight_decay = 5e-4});
  sgd.step(kLr);
  r.add_state("out.after.", m);

  const std::string path = (std::filesystem::temp_directory_path() /
                            ("fused_torch_" + name + "_" + std::to_string(::getpid()) + ".safetensors"))
                               .string();
  optim::write_safetensors(path, r.list, {});
  const std::string script = (engine::testing::repo_root() / "scripts" / "fused_torch_check.py").string();
  const std::string out =
      engine::testing::command_output(torch.python + " " + script + " " + path + " " + name + " " +
                                      std::to_string(kLr) + " 2>&1; echo rc=$?");
  std::filesystem::remove(path);
  std::printf("%s\n", out.c_str());
  EXPECT_NE(out.find("fused_torch_check: OK"), std::string::npos) << out;
  EXPECT_NE(out.find("rc=0"), std::string::npos) << out;
}

TEST(ModelFusedPyTorch, Cnn3StepMatchesPyTorch) { check_against_pytorch("cnn3"); }
TEST(ModelFusedPyTorch, Vgg6StepMatchesPyTorch) { check_against_pytorch("vgg6"); }

}  // namespace
}  // namespace engine::layers
