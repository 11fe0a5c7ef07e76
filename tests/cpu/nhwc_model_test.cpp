// Whole models in NHWC (ExecutionContext::layout) on the CPU against the same models in NCHW: vgg6 and
// resnet18, one training step (forward, loss, backward, SGD) from the same seeds and the same NCHW input
// (the Model transposes it at its entry), in float32 and float64; a checkpoint saved by an NHWC model
// gives an NCHW model the same weights and logits (Flatten keeps PyTorch's feature order, weights stay
// [K, C, R, S]); a layer refuses a 4-d input in the other layout. bf16 activations in NHWC against NCHW.

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/ops/transpose.h"
#include "layers/sequential.h"
#include "optim/checkpoint.h"
#include "tests/common/error_of.h"
#include "tests/cpu/checkpoint_test_util.h"
#include "tests/cpu/layout_model_util.h"

namespace engine::layers {
namespace {

using layout_model::compare;
using layout_model::context;
using layout_model::expect_close;
using layout_model::finalized;
using layout_model::one_step;
using testing::host_values;

// The NHWC CPU path runs the same kernels on transposed copies (exact permutations), so the two layouts
// differ at most by the order of threaded float32 reductions: a few float32 ulps relative to the largest
// element, amplified by BatchNorm's backward through one step. 1e-5 of the largest magnitude leaves that
// margin and is still four orders below what one misplaced element would do. float64 runs the
// single-threaded reference, where the two layouts must agree to rounding noise: 1e-13.
constexpr double kFloat32Tolerance = 1e-5;
constexpr double kFloat64Tolerance = 1e-13;

TEST(NhwcModel, Vgg6OneTrainingStepMatchesNchw) {
  compare(one_step<float>("vgg6", 32, DType::F32, Layout::NHWC),
          one_step<float>("vgg6", 32, DType::F32, Layout::NCHW), kFloat32Tolerance, "vgg6 float32");
  compare(one_step<double>("vgg6", 32, DType::F64, Layout::NHWC),
          one_step<double>("vgg6", 32, DType::F64, Layout::NCHW), kFloat64Tolerance, "vgg6 float64");
}

TEST(NhwcModel, Resnet18OneTrainingStepMatchesNchw) {
  // 16x16 inputs keep the float64 reference quick; resnet18 takes any size (it ends in a global pool).
  compare(one_step<float>("resnet18", 16, DType::F32, Layout::NHWC),
          one_step<float>("resnet18", 16, DType::F32, Layout::NCHW), kFloat32Tolerance, "resnet18 float32");
  compare(one_step<double>("resnet18", 16, DType::F64, Layout::NHWC),
          one_step<double>("resnet18", 16, DType::F64, Layout::NCHW), kFloat64Tolerance, "resnet18 float64");
}

// bf16 activations (--precision bf16) in NHWC: on the CPU every bf16 op is the float32 op on widened copies,
// rounded (kernels/ops/bf16_storage.h), and NHWC runs those float32 ops on NCHW copies made by exact
// transposes: the same kernels on the same values, hence the same bits (seen: the float32 runs above are
// bitwise equal too on this path). Exact equality is the right check here because a bf16 rounding would turn
// any float32 difference near a rounding boundary into a 2^-8 relative jump that no tolerance could tell
// from a real fault in the bf16 path.
constexpr double kBf16Tolerance = 0.0;

TEST(NhwcModel, Bf16StepsMatchNchw) {
  compare(one_step<float>("vgg6", 32, DType::F32, Layout::NHWC, /*bf16=*/true),
          one_step<float>("vgg6", 32, DType::F32, Layout::NCHW, /*bf16=*/true), kBf16Tolerance, "vgg6 bf16");
  compare(one_step<float>("resnet18", 16, DType::F32, Layout::NHWC, /*bf16=*/true),
          one_step<float>("resnet18", 16, DType::F32, Layout::NCHW, /*bf16=*/true), kBf16Tolerance,
          "resnet18 bf16");
}

// Runs `layer` on h, walking nested Sequentials child by child (vgg6 is Sequentials of leaf layers), and
// checks every 4-d output on the way is a BF16 NHWC tensor; returns the output and counts those checked.
Tensor forward_checking_bf16_nhwc(Layer& layer, Tensor h, const std::string& name, int& checked) {
  if (auto* seq = dynamic_cast<Sequential*>(&layer)) {
    for (const NamedChild& c : seq->children())
      h = forward_checking_bf16_nhwc(*c.layer, h, name + "." + c.name, checked);
    return h;
  }
  h = layer.forward(h, Mode::Train);
  if (h.ndim() == 4) {
    EXPECT_EQ(h.layout(), Layout::NHWC) << "output of " << name;
    EXPECT_EQ(h.dtype(), DType::BF16) << "output of " << name;
    ++checked;
  }
  return h;
}

TEST(NhwcModel, Bf16ActivationsStayBf16AndNhwcThroughTheModel) {
  Model m = finalized("vgg6", 32, DType::F32, Layout::NHWC, /*bf16=*/true);
  const Tensor x =
      ops::to_layout(m.context(), testing::random_tensor({2, 3, 32, 32}, DType::F32, 71), Layout::NHWC);
  int checked = 0;
  const Tensor out = forward_checking_bf16_nhwc(m.root(), x, "vgg6", checked);
  EXPECT_GE(checked, 12) << "vgg6's convolutions, BatchNorms, ReLUs and pools";
  EXPECT_EQ(out.ndim(), 2);
}

TEST(NhwcModel, CheckpointFromAnNhwcModelLoadsIntoAnNchwModelWithTheSameLogits) {
  Model nhwc = finalized("vgg6", 32, DType::F32, Layout::NHWC);
  const Tensor x = testing::random_tensor({2, 3, 32, 32}, DType::F32, 41);
  const Tensor labels = testing::random_labels(2, 10, 42);
  SoftmaxCrossEntropy loss;
  loss.forward(nhwc.context(), nhwc.forward(x, Mode::Train), labels);  // running statistics move
  nhwc.backward(loss.backward());
  const std::string path = optim::testing::fresh_dir("nhwc") + "/nhwc.safetensors";
  optim::save_checkpoint(path, nhwc, nullptr, {});

  Model nchw = build_model("vgg6", 3, 10, 32, 32);
  nchw.finalize(context(DType::F32, Layout::NCHW), /*init_seed=*/99);  // other weights until the load
  optim::load_checkpoint(path, nchw, nullptr);
  EXPECT_EQ(host_values(nchw.flat_parameters()), host_values(nhwc.flat_parameters()));
  EXPECT_EQ(host_values(nchw.flat_buffers()), host_values(nhwc.flat_buffers()));
  // The same float32 kernels on the same values in both layouts (see kFloat32Tolerance): equal logits.
  expect_close(host_values(nchw.forward(x, Mode::Inference)), host_values(nhwc.forward(x, Mode::Inference)),
               kFloat32Tolerance, "logits");
}

TEST(NhwcModel, InputGradientComesBackInTheInputsLayout) {
  Model m = finalized("resnet18", 8, DType::F64, Layout::NHWC);
  Model ref = finalized("resnet18", 8, DType::F64, Layout::NCHW);
  m.set_needs_input_grad(true);
  ref.set_needs_input_grad(true);
  const Tensor x = testing::random_tensor({2, 3, 8, 8}, DType::F64, 51);
  const Tensor labels = testing::random_labels(2, 10, 52);
  SoftmaxCrossEntropy loss_a, loss_b;
  loss_a.forward(m.context(), m.forward(x, Mode::Train), labels);
  loss_b.forward(ref.context(), ref.forward(x, Mode::Train), labels);
  const Tensor dx = m.backward(loss_a.backward());
  EXPECT_EQ(dx.layout(), Layout::NCHW);
  expect_close(host_values(dx), host_values(ref.backward(loss_b.backward())), kFloat64Tolerance, "dx");
}

TEST(NhwcModel, ALayerRefusesAnInputInTheOtherLayout) {
  Model m = finalized("resnet18", 8, DType::F32, Layout::NHWC);
  const Tensor x = testing::random_tensor({2, 3, 8, 8}, DType::F32, 61);  // NCHW
  const std::string e = engine::testing::error_of([&] { (void)m.root().forward(x, Mode::Train); });
  EXPECT_NE(e.find("is in the NCHW layout, the model's 4-d tensors are NHWC"), std::string::npos) << e;
}

}  // namespace
}  // namespace engine::layers
