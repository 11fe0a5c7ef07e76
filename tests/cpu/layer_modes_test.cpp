// The layer contract's modes, on the CPU: train vs eval (BatchNorm statistics, dropout), what a layer keeps
// for backward and when it releases it, inference, the loss's forward and evaluate, and when the output shape
// is worked out. The plumbing (flat buffers, the hook, errors) is in layer_contract_test.cpp.

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "kernels/cpu/conv2d.h"
#include "kernels/cpu/relu.h"
#include "kernels/cpu/residual_add.h"
#include "layers/batchnorm2d.h"
#include "layers/conv2d.h"
#include "layers/dropout.h"
#include "layers/flatten.h"
#include "layers/global_avgpool.h"
#include "layers/linear.h"
#include "layers/maxpool2d.h"
#include "layers/model.h"
#include "layers/relu.h"
#include "layers/residual.h"
#include "layers/sequential.h"
#include "tests/common/error_of.h"
#include "tests/cpu/layer_test_util.h"

namespace engine::layers {
namespace {

using engine::testing::error_of;
using testing::cpu_context;
using testing::host_values;
using testing::random_labels;
using testing::random_tensor;

Model finalized_small_net(DType dtype = DType::F32, std::uint64_t seed = 11) {
  Model m("small_net", testing::small_test_net(), {3, 8, 8});
  m.finalize(cpu_context(dtype), seed);
  return m;
}

TEST(LayerContract, BatchNormTrainUsesBatchStatisticsAndUpdatesRunningOnes) {
  auto net = std::make_unique<Sequential>();
  auto& bn = net->emplace<BatchNorm2d>(3);
  Model m("bn", std::move(net));
  m.finalize(cpu_context(DType::F64), 0);
  const Tensor x = random_tensor({4, 3, 5, 5}, DType::F64, 7, 2.0, 6.0);  // mean ~4, var ~4/3
  const std::vector<double> xv = host_values(x);

  const std::vector<double> y = host_values(m.forward(x, Mode::Train));
  EXPECT_EQ(bn.num_batches_tracked(), 1);
  const std::vector<double> mean = host_values(bn.saved_mean()), invstd = host_values(bn.saved_invstd());
  const std::vector<double> rmean = host_values(bn.running_mean()), rvar = host_values(bn.running_var());
  for (int c = 0; c < 3; ++c) {
    double s = 0, s2 = 0, ys = 0, ys2 = 0;
    const int count = 4 * 25;
    for (int n = 0; n < 4; ++n) {
      for (int i = 0; i < 25; ++i) {
        const std::size_t at = static_cast<std::size_t>((n * 3 + c) * 25 + i);
        s += xv[at], s2 += xv[at] * xv[at], ys += y[at], ys2 += y[at] * y[at];
      }
    }
    const double mu = s / count, var = s2 / count - mu * mu;
    EXPECT_NEAR(mean[c], mu, 1e-12);
    EXPECT_NEAR(invstd[c], 1.0 / std::sqrt(var + 1e-5), 1e-9);
    EXPECT_NEAR(ys / count, 0.0, 1e-12) << "normalized with the batch mean";
    EXPECT_NEAR(ys2 / count, var / (var + 1e-5), 1e-9) << "normalized with the batch variance";
    EXPECT_NEAR(rmean[c], 0.1 * mu, 1e-12);
    EXPECT_NEAR(rvar[c], 0.9 + 0.1 * var * count / (count - 1), 1e-12) << "unbiased variance";
  }

  // Eval: the running statistics normalize, nothing is updated or counted.
  const std::vector<double> ye = host_values(m.forward(x, Mode::Eval));
  EXPECT_EQ(bn.num_batches_tracked(), 1);
  EXPECT_EQ(host_values(bn.running_mean()), rmean);
  EXPECT_EQ(host_values(bn.running_var()), rvar);
  EXPECT_FALSE(bn.saved_mean().defined());
  for (int c = 0; c < 3; ++c) {
    const std::size_t at = static_cast<std::size_t>(c * 25);
    EXPECT_NEAR(ye[at], (xv[at] - rmean[c]) / std::sqrt(rvar[c] + 1e-5), 1e-12);
  }
}

TEST(LayerContract, DropoutIsTheIdentityInEvalAndDrawsAFreshMaskPerTrainingCall) {
  auto net = std::make_unique<Sequential>();
  auto& drop = net->emplace<Dropout>(0.5);
  Model m("dropout", std::move(net));
  m.finalize(cpu_context(DType::F32, /*dropout_seed=*/99), 0);
  const Tensor x = random_tensor({4, 1000}, DType::F32, 8, 1.0, 2.0);  // no zeros in x

  const Tensor ye = m.forward(x, Mode::Eval);
  EXPECT_TRUE(ye.shares_storage_with(x)) << "eval returns the input itself";
  EXPECT_EQ(m.context().dropout_offset, 0u) << "eval draws no mask";

  const std::vector<double> xv = host_values(x);
  const std::vector<double> y1 = host_values(m.forward(x, Mode::Train));
  EXPECT_EQ(drop.last_seed(), 99u);
  EXPECT_EQ(drop.last_offset(), 0u);
  const std::vector<double> y2 = host_values(m.forward(x, Mode::Train));
  EXPECT_EQ(drop.last_offset(), 1u);
  EXPECT_EQ(m.context().dropout_offset, 2u);
  EXPECT_NE(y1, y2) << "a new mask each call";
  std::size_t zeros = 0;
  for (std::size_t i = 0; i < y1.size(); ++i) {
    if (y1[i] == 0.0) {
      ++zeros;
    } else {
      EXPECT_EQ(y1[i], static_cast<double>(static_cast<float>(xv[i] * 2.0)));
    }
  }
  EXPECT_NEAR(static_cast<double>(zeros) / 4000.0, 0.5, 0.05);
  // Replaying the state replays the mask; backward uses the mask of its own forward.
  m.context().dropout_offset = 0;
  EXPECT_EQ(host_values(m.forward(x, Mode::Train)), y1);
  m.set_needs_input_grad(true);
  const std::vector<double> dx = host_values(m.backward(x));
  EXPECT_EQ(dx, y1) << "dy = x: dx is the same mask and scale";
}

TEST(LayerContract, SavedStateIsKeptForBackwardAndReleasedAfterIt) {
  auto net = std::make_unique<Sequential>();
  auto& pool = net->emplace<MaxPool2d>(2);
  Model m("pool", std::move(net));
  m.finalize(cpu_context(), 0);
  const Tensor x = random_tensor({1, 2, 4, 4}, DType::F32, 9);
  const Tensor y = m.forward(x, Mode::Train);
  ASSERT_TRUE(pool.saved_argmax().defined());
  EXPECT_EQ(pool.saved_argmax().shape(), (Shape{1, 2, 2, 2}));
  EXPECT_EQ(pool.saved_argmax().dtype(), DType::I32);
  const std::vector<double> xv = host_values(x), yv = host_values(y), am = host_values(pool.saved_argmax());
  for (std::size_t o = 0; o < yv.size(); ++o) {
    const std::size_t plane = o / 4;
    EXPECT_EQ(yv[o], xv[plane * 16 + static_cast<std::size_t>(am[o])]) << "argmax points at the max";
  }
  m.set_needs_input_grad(true);
  m.backward(y);
  EXPECT_FALSE(pool.saved_argmax().defined()) << "released after backward";
  EXPECT_THROW(m.backward(y), Error) << "one backward per forward";
}

// Evaluation runs in Mode::Inference: Eval's arithmetic, and what a training forward kept is released rather
// than held until the next training step; a backward after it is refused.
TEST(LayerContract, InferenceComputesEvalAndKeepsNothingForBackward) {
  auto net = std::make_unique<Sequential>();
  auto& bn = net->emplace<BatchNorm2d>(2);
  auto& pool = net->emplace<MaxPool2d>(2);
  Model m("pool", std::move(net));
  m.finalize(cpu_context(DType::F64), 0);
  const Tensor x = random_tensor({2, 2, 4, 4}, DType::F64, 9);
  m.forward(x, Mode::Train);
  ASSERT_TRUE(pool.saved_argmax().defined());
  const std::vector<double> eval = host_values(m.forward(x, Mode::Eval));
  ASSERT_TRUE(pool.saved_argmax().defined()) << "Eval keeps what a backward in eval mode needs";
  EXPECT_EQ(host_values(m.forward(x, Mode::Inference)), eval) << "the same arithmetic as Eval";
  EXPECT_FALSE(pool.saved_argmax().defined()) << "the training forward's argmax is released";
  EXPECT_FALSE(bn.saved_mean().defined());
  EXPECT_EQ(bn.num_batches_tracked(), 1) << "inference updates no statistics";
  m.set_needs_input_grad(true);
  EXPECT_NE(error_of([&] {
              m.backward(random_tensor({2, 2, 2, 2}, DType::F64, 3));
            }).find("backward after an inference forward"),
            std::string::npos);
}

TEST(LayerContract, LossEvaluateGivesTheForwardsMetricsWithoutAGradient) {
  Model m = finalized_small_net(DType::F64);
  const Tensor x = random_tensor({4, 3, 8, 8}, DType::F64, 12);
  const Tensor labels = random_labels(4, 3, 13);
  const Tensor logits = m.forward(x, Mode::Inference);
  SoftmaxCrossEntropy loss(0.1);
  double sum_forward = 0.0, sum_evaluate = 0.0;
  std::int64_t correct_forward = 0, correct_evaluate = 0;
  const double l_forward =
      host_values(loss.forward(m.context(), logits, labels, {&sum_forward, &correct_forward}))[0];
  const double l_evaluate =
      host_values(loss.evaluate(m.context(), logits, labels, {&sum_evaluate, &correct_evaluate}))[0];
  EXPECT_EQ(l_evaluate, l_forward);
  EXPECT_EQ(sum_evaluate, sum_forward);
  EXPECT_EQ(correct_evaluate, correct_forward);
  EXPECT_NE(error_of([&] { loss.backward(); }).find("backward needs a forward first"), std::string::npos)
      << "evaluate keeps nothing, not even the previous forward's logits";
}

TEST(LayerContract, LossIsADeviceTensorAndItsGradientMatchesTheReference) {
  Model m = finalized_small_net(DType::F64);
  const Tensor x = random_tensor({4, 3, 8, 8}, DType::F64, 12);
  const Tensor labels = random_labels(4, 3, 13);
  SoftmaxCrossEntropy loss(0.1);
  const Tensor logits = m.forward(x, Mode::Eval);
  double loss_sum = 0.0;
  std::int64_t correct = 0;
  const Tensor l = loss.forward(m.context(), logits, labels, {&loss_sum, &correct});
  EXPECT_EQ(l.shape(), (Shape{1}));
  EXPECT_EQ(l.dtype(), DType::F64);
  EXPECT_NEAR(loss_sum, 4.0 * host_values(l)[0], 1e-12);
  EXPECT_GE(correct, 0);
  EXPECT_LE(correct, 4);
  const std::vector<double> d = host_values(loss.backward(2.0));
  // Each row of (softmax - q) / n sums to zero.
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(d[i * 3] + d[i * 3 + 1] + d[i * 3 + 2], 0.0, 1e-15);
  EXPECT_THROW(loss.forward(m.context(), logits, random_labels(3, 3, 1)), Error);
  EXPECT_THROW(SoftmaxCrossEntropy(1.0), Error);
}

// The identity, counting how often its output shape is worked out.
class ShapeCountingIdentity final : public Layer {
 public:
  mutable int shape_walks = 0;
  std::string_view kind() const override { return "ShapeCountingIdentity"; }

 protected:
  Tensor forward_impl(const Tensor& x, Mode) override { return x; }
  Tensor backward_impl(const Tensor& dy, Mode) override { return dy; }
  Shape output_shape_impl(const Shape& in) const override {
    ++shape_walks;
    LAYER_CHECK(in.size() == 4, "expects an input [N, C, H, W], got {}", shape_str(in));
    return in;
  }
};

TEST(LayerContract, TheOutputShapeIsWorkedOutWhenTheInputShapeChangesNotEveryStep) {
  auto seq = std::make_unique<Sequential>();
  auto* counting = &seq->emplace<ShapeCountingIdentity>();
  Model m("counting", std::move(seq), {2, 3, 3});
  m.finalize(cpu_context(), 1);
  const int at_finalize = counting->shape_walks;  // finalize may check the sample shape
  const Tensor x = random_tensor({4, 2, 3, 3}, DType::F32, 5);
  for (int step = 0; step < 3; ++step) m.backward(m.forward(x, Mode::Train));
  // The container's walk and the layer's own forward: once each, at the first step.
  EXPECT_EQ(counting->shape_walks - at_finalize, 2);
  const Tensor other = random_tensor({5, 2, 3, 3}, DType::F32, 6);
  m.forward(other, Mode::Train);
  EXPECT_EQ(counting->shape_walks - at_finalize, 4);
  EXPECT_EQ(counting->last_output_shape(), (Shape{5, 2, 3, 3}));
  // A wrong input shape is still refused by name (one more walk, which throws) and leaves the last shapes
  // alone: the next forward of the last good shape walks nothing.
  EXPECT_NE(engine::testing::error_of([&] {
              m.forward(random_tensor({5, 2, 3}, DType::F32, 7), Mode::Train);
            }).find("ShapeCountingIdentity"),
            std::string::npos);
  EXPECT_EQ(counting->shape_walks - at_finalize, 5);
  m.forward(other, Mode::Train);
  EXPECT_EQ(counting->shape_walks - at_finalize, 5);
}

}  // namespace
}  // namespace engine::layers
