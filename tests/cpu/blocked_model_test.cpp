// Whole models in a CPU blocked layout (ExecutionContext::layout nChw16c or nChw8c, core/layout.h) against
// the same models in NCHW: vgg6 and resnet18, one training step (forward, loss, backward, SGD) from the same
// seeds and the same NCHW input, in float32, float64 and bf16; the activations really blocked between the
// layers (where their channels fill blocks); a model without BatchNorm bitwise equal to NCHW; a checkpoint of
// a blocked model loads into an NCHW one; the input gradient comes back NCHW.

#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "layers/conv2d.h"
#include "layers/flatten.h"
#include "layers/linear.h"
#include "layers/maxpool2d.h"
#include "layers/relu.h"
#include "layers/sequential.h"
#include "optim/checkpoint.h"
#include "tests/cpu/checkpoint_test_util.h"
#include "tests/cpu/layout_model_util.h"

namespace engine::layers {
namespace {

using layout_model::compare;
using layout_model::expect_close;
using layout_model::finalized;
using layout_model::one_step;
using layout_model::Step;
using testing::host_values;

constexpr Layout kBlocked[] = {Layout::NCHW16c, Layout::NCHW8c};

// What differs from the NCHW run in float32: only BatchNorm's per-channel double sums, added in another
// order (the blocked kernel runs each channel's sum in cell order, the NCHW kernel in vector partial sums),
// so a BatchNorm output differs at most by one float32 rounding where the double result falls next to a
// rounding boundary; the convolutions are the same oneDNN primitives on the same values (the NCHW run
// reorders into the layout they read), ReLU, the residual add and max pooling the same arithmetic in the same
// order. nhwc_model_test.cpp's argument and bound: a few float32 ulps relative to the largest element,
// amplified by BatchNorm's backward through one step: 1e-5 of the largest magnitude. float64 has no blocked
// kernels: every op runs the reference on NCHW copies (exact reorders) or elementwise in memory order, so the
// two layouts give the same bits.
constexpr double kFloat32Tolerance = 1e-5;
constexpr double kFloat64Tolerance = 0.0;

TEST(BlockedModel, Vgg6OneTrainingStepMatchesNchw) {
  const auto nchw32 = one_step<float>("vgg6", 32, DType::F32, Layout::NCHW);
  const auto nchw64 = one_step<double>("vgg6", 32, DType::F64, Layout::NCHW);
  for (const Layout l : kBlocked) {
    const std::string what = "vgg6 " + std::string(layout_name(l));
    compare(one_step<float>("vgg6", 32, DType::F32, l), nchw32, kFloat32Tolerance, what + " float32");
    compare(one_step<double>("vgg6", 32, DType::F64, l), nchw64, kFloat64Tolerance, what + " float64");
  }
}

TEST(BlockedModel, Resnet18OneTrainingStepMatchesNchw) {
  const auto nchw32 = one_step<float>("resnet18", 16, DType::F32, Layout::NCHW);
  const auto nchw64 = one_step<double>("resnet18", 16, DType::F64, Layout::NCHW);
  for (const Layout l : kBlocked) {
    const std::string what = "resnet18 " + std::string(layout_name(l));
    compare(one_step<float>("resnet18", 16, DType::F32, l), nchw32, kFloat32Tolerance, what + " float32");
    compare(one_step<double>("resnet18", 16, DType::F64, l), nchw64, kFloat64Tolerance, what + " float64");
  }
}

// Without BatchNorm (convolutions, ReLUs, a max pool, Flatten, Linear; no 4-d Dropout, whose mask follows
// memory order) every op of the blocked run does the NCHW run's arithmetic in the same order (the one
// reorder before Flatten is exact): the step is bitwise the NCHW step.
Step chain_step(Layout layout) {
  auto root = std::make_unique<Sequential>();
  root->emplace<Conv2d>(Conv2dOptions{.in_channels = 3, .out_channels = 16, .kernel_size = 3, .padding = 1});
  root->emplace<ReLU>();
  root->emplace<Conv2d>(Conv2dOptions{.in_channels = 16, .out_channels = 32, .kernel_size = 3, .stride = 2});
  root->emplace<ReLU>();
  root->emplace<MaxPool2d>(2);
  root->emplace<Flatten>();
  root->emplace<Linear>(32 * 3 * 3, 10);
  Model m("chain", std::move(root));
  m.finalize(layout_model::context(DType::F32, layout), /*init_seed=*/17);
  return layout_model::one_step_of<float>(m, 15, DType::F32);
}

TEST(BlockedModel, ModelWithoutBatchNormIsBitwiseTheNchwStep) {
  const Step nchw = chain_step(Layout::NCHW);
  for (const Layout l : kBlocked) compare(chain_step(l), nchw, 0.0, std::string(layout_name(l)));
}

// Runs `layer` on h, walking nested Sequentials child by child, and checks each 4-d output is in the model's
// blocked layout where its channels fill blocks (NCHW elsewhere); counts the blocked ones.
Tensor forward_checking_blocked(Layer& layer, Tensor h, Layout l, const std::string& name, int& blocked) {
  if (auto* seq = dynamic_cast<Sequential*>(&layer)) {
    for (const NamedChild& c : seq->children())
      h = forward_checking_blocked(*c.layer, h, l, name + "." + c.name, blocked);
    return h;
  }
  h = layer.forward(h, Mode::Train);
  if (h.ndim() == 4) {
    EXPECT_EQ(h.layout(), activation_layout(l, h.dim(1), h.dim(2) * h.dim(3))) << "output of " << name;
    if (is_blocked(h.layout())) ++blocked;
  }
  return h;
}

TEST(BlockedModel, ActivationsStayBlockedThroughTheModel) {
  for (const bool bf16 : {false, true}) {
    Model m = finalized("vgg6", 32, DType::F32, Layout::NCHW16c, bf16);
    const Tensor x = testing::random_tensor({2, 3, 32, 32}, DType::F32, 71);  // 3 channels: stays NCHW
    int blocked = 0;
    const Tensor out = forward_checking_blocked(m.root(), x, Layout::NCHW16c, "vgg6", blocked);
    EXPECT_GE(blocked, 12) << "vgg6's convolutions, BatchNorms, ReLUs and pools";
    EXPECT_EQ(out.ndim(), 2);
  }
}

// bf16 activations: the blocked run rounds the same float32 values to bf16 wherever the float32 runs above
// agree bitwise; a BatchNorm output one float32 rounding apart (see kFloat32Tolerance) can round to a bf16
// neighbour, 2^-8 relative, and that step propagates. 2^-8 of the largest magnitude bounds one such flip's
// direct effect; a misplaced element moves values by O(1).
TEST(BlockedModel, Bf16StepsMatchNchw) {
  for (const std::string name : {"vgg6", "resnet18"}) {
    const int hw = name == "vgg6" ? 32 : 16;
    const auto nchw = one_step<float>(name, hw, DType::F32, Layout::NCHW, /*bf16=*/true);
    compare(one_step<float>(name, hw, DType::F32, Layout::NCHW16c, /*bf16=*/true), nchw, 1.0 / 256,
            name + " bf16");
  }
}

TEST(BlockedModel, CheckpointLoadsIntoAnNchwModelAndInputGradientComesBackNchw) {
  Model blocked = finalized("resnet18", 8, DType::F32, Layout::NCHW16c);
  Model ref = finalized("resnet18", 8, DType::F32, Layout::NCHW);
  blocked.set_needs_input_grad(true);
  ref.set_needs_input_grad(true);
  const Tensor x = testing::random_tensor({2, 3, 8, 8}, DType::F32, 51);
  const Tensor labels = testing::random_labels(2, 10, 52);
  SoftmaxCrossEntropy loss_a, loss_b;
  loss_a.forward(blocked.context(), blocked.forward(x, Mode::Train), labels);
  loss_b.forward(ref.context(), ref.forward(x, Mode::Train), labels);
  const Tensor dx = blocked.backward(loss_a.backward());
  EXPECT_EQ(dx.layout(), Layout::NCHW);
  expect_close(host_values(dx), host_values(ref.backward(loss_b.backward())), kFloat32Tolerance, "dx");

  const std::string path = optim::testing::fresh_dir("blocked") + "/blocked.safetensors";
  optim::save_checkpoint(path, blocked, nullptr, {});
  Model nchw = build_model("resnet18", 3, 10, 8, 8);
  nchw.finalize(layout_model::context(DType::F32, Layout::NCHW), /*init_seed=*/99);
  optim::load_checkpoint(path, nchw, nullptr);
  EXPECT_EQ(host_values(nchw.flat_parameters()), host_values(blocked.flat_parameters()));
  EXPECT_EQ(host_values(nchw.flat_buffers()), host_values(blocked.flat_buffers()));
  expect_close(host_values(nchw.forward(x, Mode::Inference)),
               host_values(blocked.forward(x, Mode::Inference)), kFloat32Tolerance, "eval logits");
}

}  // namespace
}  // namespace engine::layers
