// bf16 activation storage (kernels/ops/bf16_storage.h, bf16 autocast) on the CPU, where it runs the data flow
// of the CUDA path with the float kernels:
//  - ops::bf16::on_float32: an op over BF16 tensors gives the float32 op on the widened values, rounded to
//    bf16 once at the output (the rounding a CUDA bf16 kernel's store does), and leaves float32 tensors to
//    the usual dispatch;
//  - vgg6 and resnet18 under autocast: every activation between the layers is BF16 after forward (the model
//    input float32, the model's output widened back to float32), gradients and master weights float32 in
//    the flat buffers, the bf16 mirror still the master's rounding, and the loss within the bound below of
//    the fp32 run's on the same weights and batch.
#include "kernels/ops/bf16_storage.h"

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/dtype.h"
#include "core/error.h"
#include "core/tensor.h"
#include "kernels/cpu/relu.h"
#include "kernels/ops/cast.h"
#include "kernels/ops/relu.h"
#include "layers/models.h"
#include "layers/softmax_cross_entropy.h"
#include "tests/common/bf16_tolerance.h"

namespace engine {
namespace {

using testing::bf16_value;
using testing::random_floats;

Tensor bf16_tensor(const std::vector<float>& v) {
  Tensor f = Tensor::from_vector(v, {static_cast<std::int64_t>(v.size())});
  Tensor b = Tensor::empty(f.shape(), DType::BF16);
  ops::cast_to_bf16(ExecutionContext{}, f, b);
  return b;
}

std::vector<float> widened_values(const Tensor& t) {
  return ops::bf16::widened(ExecutionContext{}, t).to_vector<float>();
}

TEST(Bf16Storage, AnOpOverBf16TensorsIsTheFloatOpRoundedOnce) {
  const ExecutionContext ctx;
  const std::vector<float> x = random_floats(1001, 7), dy = random_floats(1001, 8);
  const Tensor xb = bf16_tensor(x), dyb = bf16_tensor(dy);
  Tensor yb = Tensor::empty(xb.shape(), DType::BF16), dxb = Tensor::empty(xb.shape(), DType::BF16);
  yb.fill_bytes(0xFF, nullptr);  // NaN: an element the op does not write fails below
  dxb.fill_bytes(0xFF, nullptr);
  ops::relu_forward(ctx, xb, yb);
  ops::relu_backward(ctx, xb, dyb, dxb);
  const std::vector<float> xv = widened_values(xb), dyv = widened_values(dyb), y = widened_values(yb),
                           dx = widened_values(dxb);
  std::vector<float> want_y(x.size()), want_dx(x.size());
  cpu::relu_forward<float>(xv.data(), want_y.data(), static_cast<std::int64_t>(x.size()));
  cpu::relu_backward<float>(xv.data(), dyv.data(), want_dx.data(), static_cast<std::int64_t>(x.size()));
  for (std::size_t i = 0; i < x.size(); ++i) {
    ASSERT_EQ(y[i], bf16_value(want_y[i])) << i;
    ASSERT_EQ(dx[i], bf16_value(want_dx[i])) << i;
  }
}

TEST(Bf16Storage, Float32TensorsAreLeftToTheUsualDispatch) {
  const ExecutionContext ctx;
  const Tensor x = Tensor::from_vector(std::vector<float>{1.0f, -2.0f}, {2});
  bool ran = false;
  EXPECT_FALSE(ops::bf16::on_float32(ctx, {x}, {x}, [&](const Tensor*, const Tensor*) { ran = true; }));
  EXPECT_FALSE(ran);
  // One BF16 tensor among them is enough to take the float32-copies path.
  const Tensor y = Tensor::empty({2}, DType::BF16);
  EXPECT_TRUE(ops::bf16::on_float32(ctx, {x}, {y}, [&](const Tensor* in, const Tensor* out) {
    ran = in[0].dtype() == DType::F32 && out[0].dtype() == DType::F32;
    ops::relu_forward(ctx, in[0], out[0]);
  }));
  EXPECT_TRUE(ran);
  EXPECT_EQ(widened_values(y), (std::vector<float>{1.0f, 0.0f}));
}

ExecutionContext cpu_context(bool autocast) {
  ExecutionContext ctx;
  ctx.autocast_bf16 = autocast;
  return ctx;
}

struct Step {
  double loss = 0;
  std::vector<DType> activation_dtypes;  // of each top-level child's output
  DType output_dtype = DType::F32;
};

// One training forward and backward of `model` on a fixed batch, top-level children run one by one so their
// outputs can be inspected, then the whole model again (its forward widens the last activation).
Step step(layers::Model& model, int batch) {
  const std::vector<float> images = random_floats(static_cast<std::size_t>(batch) * 3 * 32 * 32, 5);
  const Tensor x = Tensor::from_vector(images, {batch, 3, 32, 32});
  std::vector<std::int32_t> label_values(static_cast<std::size_t>(batch));
  for (int i = 0; i < batch; ++i) label_values[static_cast<std::size_t>(i)] = i % 10;
  const Tensor labels = Tensor::from_vector(label_values, {batch});
  Step s;
  Tensor a = x;
  for (const layers::NamedChild& c : model.root().children()) {
    a = c.layer->forward(a, layers::Mode::Eval);
    s.activation_dtypes.push_back(a.dtype());
  }
  const Tensor logits = model.forward(x, layers::Mode::Train);
  s.output_dtype = logits.dtype();
  layers::SoftmaxCrossEntropy loss;
  s.loss = static_cast<double>(loss.forward(model.context(), logits, labels).to_vector<float>()[0]);
  model.backward(loss.backward());
  return s;
}

class Bf16Models : public ::testing::TestWithParam<std::string> {};

TEST_P(Bf16Models, ActivationsAreBf16AndGradientsAndMasterWeightsFp32) {
  const int batch = 4;
  layers::Model fp32 = layers::build_model(GetParam(), 3, 10, 32, 32);
  layers::Model bf16 = layers::build_model(GetParam(), 3, 10, 32, 32);
  fp32.finalize(cpu_context(false), 3);
  bf16.finalize(cpu_context(true), 3);  // same seed: the same fp32 master weights
  const Step want = step(fp32, batch);
  const Step got = step(bf16, batch);

  ASSERT_FALSE(got.activation_dtypes.empty());
  for (std::size_t i = 0; i < got.activation_dtypes.size(); ++i) {
    EXPECT_EQ(got.activation_dtypes[i], DType::BF16) << "output of top-level child " << i;
    EXPECT_EQ(want.activation_dtypes[i], DType::F32) << "fp32 run, child " << i;
  }
  EXPECT_EQ(got.output_dtype, DType::F32) << "the model's output leaves it in float32";
  EXPECT_EQ(bf16.flat_parameters().dtype(), DType::F32);
  EXPECT_EQ(bf16.flat_gradients().dtype(), DType::F32);
  const std::vector<float> grads = bf16.flat_gradients().to_vector<float>();
  double norm = 0;
  for (const float g : grads) {
    ASSERT_TRUE(std::isfinite(g));
    norm += static_cast<double>(g) * static_cast<double>(g);
  }
  EXPECT_GT(norm, 0.0) << "the backward wrote gradients";
  bf16.check_bf16_mirror("after a bf16 step");

  // The loss against the fp32 run's. At initialisation the logits are O(1) and each of the R bf16 roundings
  // on the path (every conv/linear input, output and BatchNorm/ReLU/pool output: R < 4 per layer) moves a
  // value by at most 2^-8 relative; BatchNorm renormalises each stage, so to first order the logits move by
  // at most R * 2^-8 of their scale, and the cross-entropy, whose gradient in the logits has a max-norm sum
  // of at most 2, by at most twice that. With R = 4 * depth (vgg6: 8 weight layers, resnet18: 21), the bound
  // is generous where it has to be a bound (a first-order estimate, not a proof), tight enough to catch a
  // wrong data flow (a lost rounding costs nothing, a wrong value costs O(1)). Measured here: vgg6 2.7448
  // (bf16) vs 2.7413 (fp32), resnet18 2.3572 vs 2.3590, against bounds of 0.69 and 1.55.
  const int depth = GetParam() == "vgg6" ? 8 : 21;
  const double tol = 2.0 * 4 * depth * testing::kBf16Rounding * std::max(1.0, want.loss);
  EXPECT_NEAR(got.loss, want.loss, tol) << "fp32 loss " << want.loss;
  EXPECT_NE(got.loss, want.loss) << "bf16 must round somewhere";
}

INSTANTIATE_TEST_SUITE_P(Vgg6AndResnet18, Bf16Models, ::testing::Values("vgg6", "resnet18"));

std::string finalize_error(ExecutionContext ctx) {
  layers::Model model = layers::build_model("cnn3", 3, 10, 32, 32);
  try {
    model.finalize(ctx, 1);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Bf16Storage, BadCombinationsAreRefusedByName) {
  ExecutionContext f64 = cpu_context(true);
  f64.dtype = DType::F64;
  EXPECT_NE(finalize_error(f64).find("bf16 autocast runs on float32 models, not float64"), std::string::npos)
      << finalize_error(f64);
  // Refused before anything touches a device, so this runs without one.
  ExecutionContext implicit_gemm = cpu_context(true);
  implicit_gemm.device = Device::cuda(0);
  implicit_gemm.conv_algorithm = ConvAlgorithm::ImplicitGemm;
  EXPECT_NE(finalize_error(implicit_gemm).find("the implicit-GEMM convolution is float32 only"),
            std::string::npos)
      << finalize_error(implicit_gemm);
  // A bf16 tensor given to an op that has no bf16 path (the optimizer's, the EMA's) names the op and dtype.
  const Tensor b = Tensor::empty({4}, DType::BF16);
  try {
    ops::cast_to_bf16(ExecutionContext{}, b, Tensor::empty({4}, DType::BF16));
    ADD_FAILURE() << "a bf16 source was cast as float32";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bfloat16"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace engine
