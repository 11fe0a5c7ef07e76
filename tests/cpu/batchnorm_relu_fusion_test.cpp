// BatchNorm2d + ReLU fusion (issue 17 item 3, issue 19 item 3): the fused fast CPU kernels against the
// float64 reference of the UNFUSED ops (kernels/cpu/batchnorm2d.h, then kernels/cpu/relu.h), forward and
// backward, training and eval; the fusion pass over the zoo; fused and unfused models giving the same loss
// and gradients; and the pass-through ReLU refusing any input but its BatchNorm's output.

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "dist/single_process_group.h"
#include "dist/sync_batchnorm_layer.h"
#include "kernels/cpu/batchnorm2d.h"
#include "kernels/cpu/relu.h"
#include "kernels/cpu_fast/batchnorm2d.h"
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

struct Case {
  BatchNorm2dShape g;
  std::vector<float> x, gamma, beta, dy;
};

// x offset (mean 3, spread 2) so centring matters; channel 0 constant with beta 0 so its BatchNorm output is
// exactly 0, the ReLU's kink, where the gradient must be 0.
Case make_case(const BatchNorm2dShape& g, std::uint32_t seed) {
  Case k{g, testing::uniform_floats(g.x_size(), seed, 2.0f, 4.0f),
         testing::uniform_floats(static_cast<std::size_t>(g.c), seed + 1, 0.5f, 1.5f),
         testing::uniform_floats(static_cast<std::size_t>(g.c), seed + 2, -0.5f, 0.5f),
         testing::uniform_floats(g.x_size(), seed + 3)};
  const std::size_t hw = static_cast<std::size_t>(g.h) * static_cast<std::size_t>(g.w);
  for (int n = 0; n < g.n; ++n) {
    for (std::size_t i = 0; i < hw; ++i)
      k.x[static_cast<std::size_t>(n) * static_cast<std::size_t>(g.c) * hw + i] = 3.25f;
  }
  k.beta[0] = 0.0f;
  return k;
}

// The shapes: odd sizes below the OpenMP threshold, one above it (73,216 values: the threaded path), and the
// small maps the fast kernel unrolls.
const BatchNorm2dShape kShapes[] = {{.n = 3, .c = 5, .h = 7, .w = 9},
                                    {.n = 8, .c = 64, .h = 13, .w = 11},
                                    // the constant plane sizes of the late stages (1x1, 2x2, 3x3)
                                    {.n = 5, .c = 4, .h = 1, .w = 1},
                                    {.n = 6, .c = 3, .h = 2, .w = 2},
                                    {.n = 3, .c = 7, .h = 3, .w = 3}};

TEST(BatchNormReluFusion, TrainingKernelsMatchTheFloat64ReferenceOfBatchNormThenRelu) {
  for (const BatchNorm2dShape& g : kShapes) {
    const Case k = make_case(g, 40);
    const std::size_t c = static_cast<std::size_t>(g.c), size = g.x_size();
    // Reference: BatchNorm, then ReLU, in float64 from the same float inputs.
    const std::vector<double> xd = widen(k.x), gd = widen(k.gamma), bd = widen(k.beta), dyd = widen(k.dy);
    std::vector<double> bn_out(size), y_ref(size), mean_ref(c), invstd_ref(c), rm_ref(c, 0.5), rv_ref(c, 2.0);
    cpu::batchnorm2d_forward_training<double>(g, xd.data(), gd.data(), bd.data(), bn_out.data(),
                                              mean_ref.data(), invstd_ref.data(), rm_ref.data(),
                                              rv_ref.data());
    cpu::relu_forward<double>(bn_out.data(), y_ref.data(), static_cast<std::int64_t>(size));

    auto y = poisoned(size), mean = poisoned(c), invstd = poisoned(c);
    std::vector<float> rm(c, 0.5f), rv(c, 2.0f);
    cpu_fast::batchnorm2d_forward_training(
        g, k.x.data(), k.gamma.data(), k.beta.data(), y.data(), mean.data(), invstd.data(), rm.data(),
        rv.data(), cpu::kBatchNormDefaultMomentum, cpu::kBatchNormDefaultEps, /*relu=*/true);
    expect_near_reference(y, y_ref, "y");
    expect_near_reference(mean, mean_ref, "save_mean");
    expect_near_reference(invstd, invstd_ref, "save_invstd");
    expect_near_reference(rm, rm_ref, "running_mean");
    expect_near_reference(rv, rv_ref, "running_var");
    for (std::size_t i = 0; i < static_cast<std::size_t>(g.h * g.w); ++i) ASSERT_EQ(y[i], 0.0f) << "the kink";

    // Backward: ReLU's backward on its input (the BatchNorm output), then BatchNorm's, from the statistics
    // the fused forward saved (the backward's inputs, the same for both).
    std::vector<double> masked(size), dx_ref(size), dgamma_ref(c), dbeta_ref(c);
    cpu::relu_backward<double>(bn_out.data(), dyd.data(), masked.data(), static_cast<std::int64_t>(size));
    const std::vector<double> saved_mean = widen(mean), saved_invstd = widen(invstd);
    cpu::batchnorm2d_backward_training<double>(g, xd.data(), gd.data(), saved_mean.data(),
                                               saved_invstd.data(), masked.data(), dx_ref.data(),
                                               dgamma_ref.data(), dbeta_ref.data());
    auto dx = poisoned(size), dgamma = poisoned(c), dbeta = poisoned(c);
    cpu_fast::batchnorm2d_backward_training(g, k.x.data(), k.gamma.data(), mean.data(), invstd.data(),
                                            k.dy.data(), dx.data(), dgamma.data(), dbeta.data(),
                                            /*relu_y=*/y.data());
    expect_near_reference(dx, dx_ref, "dx");
    expect_near_reference(dgamma, dgamma_ref, "dgamma");
    expect_near_reference(dbeta, dbeta_ref, "dbeta");
    EXPECT_EQ(dbeta[0], 0.0f) << "channel 0 sits on the kink: ReLU passes no gradient";
  }
}

TEST(BatchNormReluFusion, EvalKernelsMatchTheFloat64ReferenceOfBatchNormThenRelu) {
  for (const BatchNorm2dShape& g : kShapes) {
    const Case k = make_case(g, 50);
    const std::size_t c = static_cast<std::size_t>(g.c), size = g.x_size();
    const std::vector<float> rm = testing::uniform_floats(c, 55, 2.5f, 3.5f),
                             rv = testing::uniform_floats(c, 56, 0.2f, 1.5f);
    const std::vector<double> xd = widen(k.x), gd = widen(k.gamma), bd = widen(k.beta), dyd = widen(k.dy),
                              rmd = widen(rm), rvd = widen(rv);
    std::vector<double> bn_out(size), y_ref(size);
    cpu::batchnorm2d_forward_eval<double>(g, xd.data(), gd.data(), bd.data(), rmd.data(), rvd.data(),
                                          bn_out.data());
    cpu::relu_forward<double>(bn_out.data(), y_ref.data(), static_cast<std::int64_t>(size));
    auto y = poisoned(size);
    cpu_fast::batchnorm2d_forward_eval(g, k.x.data(), k.gamma.data(), k.beta.data(), rm.data(), rv.data(),
                                       y.data(), cpu::kBatchNormDefaultEps, /*relu=*/true);
    expect_near_reference(y, y_ref, "eval y");

    std::vector<double> masked(size), dx_ref(size), dgamma_ref(c), dbeta_ref(c);
    cpu::relu_backward<double>(bn_out.data(), dyd.data(), masked.data(), static_cast<std::int64_t>(size));
    cpu::batchnorm2d_backward_eval<double>(g, xd.data(), gd.data(), rmd.data(), rvd.data(), masked.data(),
                                           dx_ref.data(), dgamma_ref.data(), dbeta_ref.data());
    auto dx = poisoned(size), dgamma = poisoned(c), dbeta = poisoned(c);
    cpu_fast::batchnorm2d_backward_eval(g, k.x.data(), k.gamma.data(), rm.data(), rv.data(), k.dy.data(),
                                        dx.data(), dgamma.data(), dbeta.data(), cpu::kBatchNormDefaultEps,
                                        /*relu_y=*/y.data());
    expect_near_reference(dx, dx_ref, "eval dx");
    expect_near_reference(dgamma, dgamma_ref, "eval dgamma");
    expect_near_reference(dbeta, dbeta_ref, "eval dbeta");
  }
}

// The engine's ReLU semantics survive the fusion: NaN propagates forward, and the ReLU passes no gradient
// for it, at the kink or below (dbeta, the sum of the masked dy, counts only the positive output).
// BatchNorm's own dx at the NaN input is NaN (x enters its formula), exactly as in the unfused reference.
TEST(BatchNormReluFusion, NanPropagatesForwardAndGetsNoGradient) {
  const BatchNorm2dShape g{.n = 1, .c = 1, .h = 1, .w = 4};
  const std::vector<float> rm = {0.0f}, rv = {1.0f}, gamma = {1.0f}, beta = {0.0f};
  const std::vector<float> x = {std::numeric_limits<float>::quiet_NaN(), -1.0f, 0.0f, 2.0f};
  const std::vector<float> dy = {5.0f, 5.0f, 5.0f, 5.0f};
  auto y = poisoned(4);
  cpu_fast::batchnorm2d_forward_eval(g, x.data(), gamma.data(), beta.data(), rm.data(), rv.data(), y.data(),
                                     0.0,
                                     /*relu=*/true);
  EXPECT_TRUE(std::isnan(y[0]));
  EXPECT_EQ(y[1], 0.0f);
  EXPECT_EQ(y[2], 0.0f);
  EXPECT_EQ(y[3], 2.0f);
  auto dx = poisoned(4), dbeta = poisoned(1);
  cpu_fast::batchnorm2d_backward_eval(g, x.data(), gamma.data(), rm.data(), rv.data(), dy.data(), dx.data(),
                                      nullptr, dbeta.data(), 0.0, /*relu_y=*/y.data());
  EXPECT_EQ(dbeta[0], 5.0f) << "only the positive output passes its gradient";
  EXPECT_TRUE(std::isnan(dx[0])) << "BatchNorm's dx at a NaN input, as the unfused reference";
  EXPECT_EQ(dx[1], 0.0f) << "below the kink";
  EXPECT_EQ(dx[2], 0.0f) << "at the kink";
  EXPECT_EQ(dx[3], 5.0f);
  // The unfused float64 reference agrees element by element (NaN where it has NaN).
  const std::vector<double> xd = widen(x), gd = widen(gamma), bd = widen(beta), rmd = widen(rm),
                            rvd = widen(rv), dyd = widen(dy);
  std::vector<double> bn_out(4), masked(4), dx_ref(4), dbeta_ref(1);
  cpu::batchnorm2d_forward_eval<double>(g, xd.data(), gd.data(), bd.data(), rmd.data(), rvd.data(),
                                        bn_out.data(), 0.0);
  cpu::relu_backward<double>(bn_out.data(), dyd.data(), masked.data(), 4);
  cpu::batchnorm2d_backward_eval<double>(g, xd.data(), gd.data(), rmd.data(), rvd.data(), masked.data(),
                                         dx_ref.data(), nullptr, dbeta_ref.data(), 0.0);
  EXPECT_EQ(static_cast<double>(dbeta[0]), dbeta_ref[0]);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(std::isnan(dx[i]), std::isnan(dx_ref[i])) << i;
    if (!std::isnan(dx_ref[i])) {
      EXPECT_EQ(static_cast<double>(dx[i]), dx_ref[i]) << i;
    }
  }
}

// ---- the fusion pass and whole models ----

TEST(BatchNormReluFusion, ThePassFusesEveryBatchNormReluPairAndKeepsTheStateDict) {
  const std::pair<const char*, int> expected[] = {
      {"vgg6", 6}, {"cnn3", 3}, {"resnet18", 9}, {"airbench", 0}, {"mnist_cnn", 0}};
  for (const auto& [name, pairs] : expected) {
    Model fused = layers::build_model(name, name == std::string("mnist_cnn") ? 1 : 3, 10,
                                      name == std::string("mnist_cnn") ? 28 : 32,
                                      name == std::string("mnist_cnn") ? 28 : 32);
    Model plain = layers::build_model(name, name == std::string("mnist_cnn") ? 1 : 3, 10,
                                      name == std::string("mnist_cnn") ? 28 : 32,
                                      name == std::string("mnist_cnn") ? 28 : 32);
    plain.set_fusion(false);
    fused.finalize(cpu_context(), 1);
    plain.finalize(cpu_context(), 1);
    // resnet18: its stem's bn1/relu and every block's bn1/relu1 (bn2 feeds the residual add, not a ReLU);
    // airbench: GELU, not ReLU.
    EXPECT_EQ(fused.fused_batchnorm_relu(), pairs) << name;
    EXPECT_EQ(plain.fused_batchnorm_relu(), 0) << name;
    ASSERT_EQ(fused.state_dict().size(), plain.state_dict().size()) << name;
    for (std::size_t i = 0; i < fused.state_dict().size(); ++i) {
      EXPECT_EQ(fused.state_dict()[i].name, plain.state_dict()[i].name) << name;
    }
    EXPECT_EQ(fused.flat_parameters().numel(), plain.flat_parameters().numel()) << name;
  }
}

TEST(BatchNormReluFusion, FusedAndUnfusedModelsGiveTheSameLossAndGradientsInFloat32) {
  // resnet18 at 16x16 (its global pool takes any size; its last BatchNorms still see 3*2*2 values each).
  for (const auto& [name, side] : {std::pair{"cnn3", 32}, std::pair{"resnet18", 16}}) {
    Model fused = zoo_model(name, true, DType::F32, side), plain = zoo_model(name, false, DType::F32, side);
    ASSERT_GT(fused.fused_batchnorm_relu(), 0);
    const Tensor x = layers::testing::random_tensor({3, 3, side, side}, DType::F32, 71);
    const Tensor labels = layers::testing::random_labels(3, 10, 72);
    for (const Mode mode : {Mode::Train, Mode::Eval}) {
      const StepResult a = step(fused, x, labels, mode), b = step(plain, x, labels, mode);
      EXPECT_NEAR(a.loss, b.loss, 1e-5 * std::fabs(b.loss)) << name;
      expect_close_to(a.logits, b.logits, "logits", name);
      expect_close_to(a.grads, b.grads, "gradient", name);
      expect_close_to(a.buffers, b.buffers, "running statistics", name);
    }
  }
}

// float64 runs the reference's plain composition either way: the same operations in the same order, so
// the results are bitwise equal.
TEST(BatchNormReluFusion, FusedAndUnfusedModelsAreBitwiseEqualInFloat64) {
  Model fused = zoo_model("cnn3", true, DType::F64, 32), plain = zoo_model("cnn3", false, DType::F64, 32);
  const Tensor x = layers::testing::random_tensor({2, 3, 32, 32}, DType::F64, 81);
  const Tensor labels = layers::testing::random_labels(2, 10, 82);
  for (const Mode mode : {Mode::Train, Mode::Eval}) {
    const StepResult a = step(fused, x, labels, mode), b = step(plain, x, labels, mode);
    EXPECT_EQ(a.loss, b.loss);
    EXPECT_EQ(a.logits, b.logits);
    EXPECT_EQ(a.grads, b.grads);
    EXPECT_EQ(a.buffers, b.buffers);
  }
}

Model bn_relu_model(std::unique_ptr<layers::Layer> bn) {
  auto s = std::make_unique<layers::Sequential>();
  s->add(std::move(bn));
  s->emplace<layers::ReLU>();
  Model m("bn_relu", std::move(s), {3, 4, 5});
  m.finalize(cpu_context(), 2);
  return m;
}

TEST(BatchNormReluFusion, ThePassThroughReluRefusesAnyInputButItsBatchNormsOutput) {
  Model m = bn_relu_model(std::make_unique<layers::BatchNorm2d>(3));
  ASSERT_EQ(m.fused_batchnorm_relu(), 1);
  auto& seq = static_cast<layers::Sequential&>(m.root());
  const Tensor x = layers::testing::random_tensor({2, 3, 4, 5}, DType::F32, 91);
  // Alone, before its BatchNorm ran, and with another tensor after it ran: refused, naming the layers.
  const std::string alone = testing::error_of([&] { seq.at(1).forward(x, Mode::Train); });
  EXPECT_NE(alone.find("ReLU '1'"), std::string::npos) << alone;
  EXPECT_NE(alone.find("is fused into BatchNorm2d '0'"), std::string::npos) << alone;
  const Tensor y = seq.at(0).forward(x, Mode::Train);
  EXPECT_NE(testing::error_of([&] { seq.at(1).forward(x, Mode::Train); }).find("is fused into"),
            std::string::npos);
  // Its BatchNorm's own output passes through, already relu'd.
  const Tensor out = seq.at(1).forward(y, Mode::Train);
  EXPECT_EQ(out.raw_data(), y.raw_data());
  for (const double v : host_values(out)) EXPECT_GE(v, 0.0);
}

TEST(BatchNormReluFusion, SyncBatchNormIsNotFused) {
  auto pg = dist::make_single_process_group();
  Model m = bn_relu_model(std::make_unique<dist::SyncBatchNorm2d>(*pg, 3));
  EXPECT_EQ(m.fused_batchnorm_relu(), 0);
  auto& seq = static_cast<layers::Sequential&>(m.root());
  EXPECT_EQ(static_cast<layers::ReLU&>(seq.at(1)).fused_into(), nullptr);
  // And it refuses to be told otherwise.
  dist::SyncBatchNorm2d lone(*pg, 3);
  EXPECT_NE(testing::error_of([&] { lone.set_fused_relu(true); }).find("does not fuse a ReLU"),
            std::string::npos);
}

TEST(BatchNormReluFusion, FusionIsChosenBeforeFinalize) {
  Model m = bn_relu_model(std::make_unique<layers::BatchNorm2d>(3));
  EXPECT_NE(testing::error_of([&] { m.set_fusion(false); }).find("before finalize"), std::string::npos);
  auto& bn = static_cast<layers::BatchNorm2d&>(static_cast<layers::Sequential&>(m.root()).at(0));
  EXPECT_NE(testing::error_of([&] { bn.set_fused_relu(false); }).find("before the model is finalized"),
            std::string::npos);
}

}  // namespace
}  // namespace engine
