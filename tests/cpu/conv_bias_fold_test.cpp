// The conv bias folded into the BatchNorm2d that follows it (issue 17 item 3, layers/fusion.h): the
// statistics kernels' running-mean shift against the float64 reference of the UNFOLDED ops (the biased
// input through BatchNorm), the pass over the zoo (float32 models only), and folded float32 models against
// unfolded ones and against the float64 reference model, whose bias gradients show the exact value 0.

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "dist/single_process_group.h"
#include "dist/sync_batchnorm_layer.h"
#include "kernels/cpu/batchnorm2d.h"
#include "kernels/cpu/relu.h"
#include "kernels/cpu_fast/batchnorm2d.h"
#include "layers/batchnorm2d.h"
#include "layers/conv2d.h"
#include "layers/models.h"
#include "layers/softmax_cross_entropy.h"
#include "tests/common/error_of.h"
#include "tests/common/test_data.h"
#include "tests/cpu/fusion_test_util.h"
#include "tests/cpu/layer_test_util.h"

namespace engine {
namespace {

using layers::Mode;
using layers::Model;
using layers::testing::cpu_context;
using layers::testing::host_values;
using namespace fusion_testing;  // NOLINT(google-build-using-namespace): the shared helpers of this suite

// The reference adds the bias to x in double (|x|, |b| < 8: exact to 2^-50), then normalizes; the kernel
// normalizes x and shifts the running mean: the same centred values up to double rounding, so the
// one-rounding bound of expect_near_reference (fusion_test_util.h) holds.
TEST(ConvBiasFold, TheRunningMeanShiftMatchesTheReferenceOfTheBiasedInput) {
  const BatchNorm2dShape g{.n = 3, .c = 5, .h = 7, .w = 9};
  const std::size_t size = g.x_size(), c = static_cast<std::size_t>(g.c);
  const std::vector<float> x = testing::uniform_floats(size, 31, 2.0f, 4.0f);
  const std::vector<float> bias = testing::uniform_floats(c, 32, -3.0f, 3.0f);
  const std::vector<float> gamma = testing::uniform_floats(c, 33, 0.5f, 1.5f);
  const std::vector<float> beta = testing::uniform_floats(c, 34, -0.5f, 0.5f);
  const std::size_t hw = static_cast<std::size_t>(g.h * g.w);
  for (const bool relu : {false, true}) {
    SCOPED_TRACE(relu ? "fused ReLU" : "no ReLU");
    // The reference of the unfolded ops: conv output + bias, then BatchNorm (then ReLU).
    std::vector<double> biased(size);
    for (std::size_t i = 0; i < size; ++i)
      biased[i] = static_cast<double>(x[i]) + static_cast<double>(bias[(i / hw) % c]);
    const std::vector<double> gd = widen(gamma), bd = widen(beta);
    std::vector<double> y_ref(size), mean_ref(c), invstd_ref(c), rm_ref(c, 0.5), rv_ref(c, 2.0);
    cpu::batchnorm2d_forward_training<double>(g, biased.data(), gd.data(), bd.data(), y_ref.data(),
                                              mean_ref.data(), invstd_ref.data(), rm_ref.data(),
                                              rv_ref.data(), 0.1, 1e-5);
    if (relu) cpu::relu_forward<double>(y_ref.data(), y_ref.data(), static_cast<std::int64_t>(size));

    std::vector<float> y = poisoned(size), mean = poisoned(c), invstd = poisoned(c), rm(c, 0.5f), rv(c, 2.0f);
    cpu_fast::batchnorm2d_forward_training(g, x.data(), gamma.data(), beta.data(), y.data(), mean.data(),
                                           invstd.data(), rm.data(), rv.data(), 0.1, 1e-5, relu, bias.data());
    expect_near_reference(y, y_ref, "y");
    expect_near_reference(rm, rm_ref, "running_mean");
    expect_near_reference(rv, rv_ref, "running_var");
    expect_near_reference(invstd, invstd_ref, "save_invstd");
    // The saved mean is the unbiased input's: what backward, which sees that input, needs.
    std::vector<double> mean_minus_bias(c);
    for (std::size_t k = 0; k < c; ++k) mean_minus_bias[k] = mean_ref[k] - static_cast<double>(bias[k]);
    expect_near_reference(mean, mean_minus_bias, "save_mean");
  }
  // The reference with the shift: the same, up to double rounding.
  const std::vector<double> xd = widen(x), gd = widen(gamma), bd = widen(beta), shift = widen(bias);
  std::vector<double> biased(size);
  for (std::size_t i = 0; i < size; ++i) biased[i] = xd[i] + shift[(i / hw) % c];
  std::vector<double> y1(size), y2(size), m1(c), m2(c), s1(c), s2(c), rm1(c, 0.5), rm2(c, 0.5), rv1(c, 2.0),
      rv2(c, 2.0);
  cpu::batchnorm2d_forward_training<double>(g, biased.data(), gd.data(), bd.data(), y1.data(), m1.data(),
                                            s1.data(), rm1.data(), rv1.data(), 0.1, 1e-5);
  cpu::batchnorm2d_forward_training<double>(g, xd.data(), gd.data(), bd.data(), y2.data(), m2.data(),
                                            s2.data(), rm2.data(), rv2.data(), 0.1, 1e-5, shift.data());
  for (std::size_t k = 0; k < c; ++k) {
    EXPECT_NEAR(rm2[k], rm1[k], 1e-14) << k;
    EXPECT_NEAR(rv2[k], rv1[k], 1e-13) << k;
  }
}

// ---- the pass and whole models ----

TEST(ConvBiasFold, ThePassFoldsEveryConvBatchNormPairOfFloat32Models) {
  const std::pair<const char*, int> expected[] = {
      {"vgg6", 6}, {"cnn3", 3}, {"resnet18", 0}, {"airbench", 0}, {"mnist_cnn", 0}};
  for (const auto& [name, pairs] : expected) {
    const int side = std::string(name) == "mnist_cnn" ? 28 : 32;
    const Model folded = zoo_model(name, true, DType::F32, side),
                plain = zoo_model(name, false, DType::F32, side);
    // resnet18's convs have no bias; airbench's whitening conv (the only one with a bias) feeds a GELU;
    // mnist_cnn has no BatchNorm.
    EXPECT_EQ(folded.folded_conv_bias(), pairs) << name;
    EXPECT_EQ(plain.folded_conv_bias(), 0) << name;
    // float64 models run the reference's plain composition: nothing folded.
    EXPECT_EQ(zoo_model(name, true, DType::F64, side).folded_conv_bias(), 0) << name;
    ASSERT_EQ(folded.state_dict().size(), plain.state_dict().size()) << name;
    for (std::size_t i = 0; i < folded.state_dict().size(); ++i) {
      EXPECT_EQ(folded.state_dict()[i].name, plain.state_dict()[i].name) << name;
    }
  }
}

// The flat-gradient ranges of the folded conv biases.
Ranges folded_bias_ranges(const Model& m) {
  Ranges ranges;
  for (const layers::Parameter& p : m.parameters()) {
    const auto* conv = dynamic_cast<const layers::Conv2d*>(p.layer);
    if (conv != nullptr && conv->bias_folded() && p.name.ends_with(".bias")) {
      ranges.emplace_back(static_cast<std::size_t>(p.offset), static_cast<std::size_t>(p.value.numel()));
    }
  }
  return ranges;
}

// cnn3 (3 folded pairs). A max-pool or ReLU decision on a value within a float rounding of a tie or of 0 can
// go either way between any two float32 computations of the same model (the unfolded float32 vgg6 differs
// from its float64 reference by 3% in a gradient for some inputs, through one such flip): these inputs have
// no decision that close, so the comparison shows the arithmetic, as in batchnorm_relu_fusion_test.
TEST(ConvBiasFold, FoldedModelsTrainLikeTheUnfoldedOnesAndTheFoldedBiasGradientIsExactlyZero) {
  Model folded = zoo_model("cnn3", true, DType::F32), plain = zoo_model("cnn3", false, DType::F32);
  Model reference = zoo_model("cnn3", false, DType::F64);
  ASSERT_EQ(folded.folded_conv_bias(), 3);
  const auto ranges = folded_bias_ranges(folded);
  ASSERT_EQ(ranges.size(), 3u);
  const Tensor x = layers::testing::random_tensor({3, 3, 32, 32}, DType::F32, 71);
  // The same values in float64 (random_tensor in float64 would not round them to float first).
  const Tensor x64 = layers::testing::host_tensor(host_values(x), {3, 3, 32, 32}, DType::F64);
  const Tensor labels = layers::testing::random_labels(3, 10, 72);

  const StepResult a = step(folded, x, labels, Mode::Train), b = step(plain, x, labels, Mode::Train);
  const StepResult r = step(reference, x64, labels, Mode::Train);
  EXPECT_NEAR(a.loss, b.loss, 1e-5 * std::fabs(b.loss));
  expect_close_to(a.logits, b.logits, "logits", "cnn3");
  expect_close_to(a.grads, b.grads, "gradient", "cnn3", ranges);
  // The running means take the bias in inside the statistics kernel.
  expect_close_to(a.buffers, b.buffers, "running statistics", "cnn3");
  double grad_scale = 0.0;
  for (const double v : r.grads) grad_scale = std::max(grad_scale, std::fabs(v));
  for (const auto& [begin, n] : ranges) {
    for (std::size_t i = begin; i < begin + n; ++i) {
      EXPECT_EQ(a.grads[i], 0.0) << "folded bias gradient [" << i << "]";
      // The float64 reference of the unfolded ops: zero up to double rounding of its sums (a few hundred
      // terms per element of size <= the largest gradient: far below 1e-10 of it).
      EXPECT_LE(std::fabs(r.grads[i]), 1e-10 * grad_scale) << "reference bias gradient [" << i << "]";
    }
  }

  // Eval mode adds the bias in the conv and its gradient is the usual sum: as unfolded.
  const StepResult ae = step(folded, x, labels, Mode::Eval), be = step(plain, x, labels, Mode::Eval);
  EXPECT_NEAR(ae.loss, be.loss, 1e-5 * std::fabs(be.loss));
  expect_close_to(ae.logits, be.logits, "eval logits", "cnn3");
  expect_close_to(ae.grads, be.grads, "eval gradient", "cnn3");
  bool some_bias_gradient = false;
  for (const auto& [begin, n] : ranges) {
    for (std::size_t i = begin; i < begin + n; ++i) some_bias_gradient |= ae.grads[i] != 0.0;
  }
  EXPECT_TRUE(some_bias_gradient) << "eval-mode conv bias gradients are not zero";
}

TEST(ConvBiasFold, OnlyBeforeFinalizeAndOnlyWithLocalStatisticsAndABias) {
  Model m = zoo_model("vgg6", true, DType::F32);
  layers::Conv2d conv(layers::Conv2dOptions{.in_channels = 3, .out_channels = 4, .kernel_size = 3});
  layers::Conv2d no_bias(
      layers::Conv2dOptions{.in_channels = 3, .out_channels = 4, .kernel_size = 3, .bias = false});
  EXPECT_NE(testing::error_of([&] { no_bias.set_bias_folded(true); }).find("no bias"), std::string::npos);
  layers::BatchNorm2d bn(5);
  EXPECT_NE(testing::error_of([&] { bn.set_folded_conv(&conv); }).find("5 channels"), std::string::npos);
  auto pg = dist::make_single_process_group();
  dist::SyncBatchNorm2d sync(*pg, 4);
  EXPECT_NE(testing::error_of([&] { sync.set_folded_conv(&conv); }).find("not local"), std::string::npos);
  // A finalized model's layers refuse.
  auto* first_conv = dynamic_cast<layers::Conv2d*>(m.parameters().front().layer);
  ASSERT_NE(first_conv, nullptr);
  EXPECT_TRUE(first_conv->bias_folded());
  EXPECT_NE(
      testing::error_of([&] { first_conv->set_bias_folded(false); }).find("before the model is finalized"),
      std::string::npos);
}

}  // namespace
}  // namespace engine
