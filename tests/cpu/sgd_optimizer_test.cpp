// optim::Sgd over a model's flat buffers: torch.optim.SGD's update, worked out by hand for two steps, and the
// momentum state a checkpoint needs.
//
// torch (momentum 0.9, dampening 0, weight_decay 0.01, lr 0.1), with p = 1 and g = 0.5 on both steps:
//   step 1: g' = 0.5 + 0.01 * 1 = 0.51;        buf = g' = 0.51 (no dampening on the first step);  p = 0.949
//   step 2: g' = 0.5 + 0.01 * 0.949 = 0.50949;  buf = 0.9 * 0.51 + 0.50949 = 0.96849;  p = 0.949 - 0.096849
//           = 0.852151
//   nesterov, step 1: update = g' + 0.9 * buf = 0.51 + 0.459 = 0.969; p = 1 - 0.0969 = 0.9031

#include <algorithm>
#include <cmath>

#include <gtest/gtest.h>

#include "optim/sgd.h"
#include "tests/cpu/layer_test_util.h"

namespace engine::optim {
namespace {

layers::Model small_model(DType dtype) {
  layers::Model m("small_net", layers::testing::small_test_net(), {3, 8, 8});
  m.finalize(layers::testing::cpu_context(dtype), 1);
  return m;
}

void fill(const Tensor& t, double v) {
  if (t.dtype() == DType::F64) {
    std::fill(t.data<double>(), t.data<double>() + t.numel(), v);
  } else {
    std::fill(t.data<float>(), t.data<float>() + t.numel(), static_cast<float>(v));
  }
}

TEST(SgdOptimizer, TwoStepsMatchTorchByHand) {
  layers::Model m = small_model(DType::F64);
  const Tensor& w = m.parameters()[0].value;  // a parameter view, not padding
  fill(w, 1.0);
  fill(m.parameters()[0].grad, 0.5);
  Sgd sgd(m, SgdConfig{.momentum = 0.9, .weight_decay = 0.01});
  EXPECT_FALSE(sgd.has_momentum_state());
  sgd.step(0.1);
  EXPECT_TRUE(sgd.has_momentum_state());
  EXPECT_NEAR(w.data<double>()[0], 0.949, 1e-15);
  EXPECT_NEAR(sgd.momentum_buffer().data<double>()[0], 0.51, 1e-15);
  sgd.step(0.1);
  EXPECT_NEAR(w.data<double>()[0], 0.852151, 1e-15);
  EXPECT_NEAR(sgd.momentum_buffer().data<double>()[0], 0.96849, 1e-15);
  EXPECT_EQ(sgd.steps(), 2);
}

TEST(SgdOptimizer, NesterovFirstStep) {
  layers::Model m = small_model(DType::F64);
  fill(m.parameters()[0].value, 1.0);
  fill(m.parameters()[0].grad, 0.5);
  Sgd sgd(m, SgdConfig{.momentum = 0.9, .weight_decay = 0.01, .nesterov = true});
  sgd.step(0.1);
  EXPECT_NEAR(m.parameters()[0].value.data<double>()[0], 0.9031, 1e-15);
}

TEST(SgdOptimizer, PaddingStaysZeroAndNoMomentumKeepsNoBuffer) {
  layers::Model m = small_model(DType::F32);
  fill(m.flat_gradients(), 0.0);
  for (const auto& p : m.parameters()) fill(p.grad, 0.25);
  Sgd plain(m, SgdConfig{});
  EXPECT_FALSE(plain.momentum_buffer().defined());
  Sgd with_momentum(m, SgdConfig{.momentum = 0.9});
  with_momentum.step(0.1);
  const auto& params = m.parameters();
  const float* buf = with_momentum.momentum_buffer().data<float>();
  const std::int64_t end0 = params[0].offset + params[0].value.numel();
  for (std::int64_t i = end0; i < params[1].offset; ++i) EXPECT_EQ(buf[i], 0.0f) << "padding element " << i;
}

TEST(SgdOptimizer, RejectsWhatTorchRejects) {
  layers::Model m = small_model(DType::F32);
  EXPECT_THROW(Sgd(m, SgdConfig{.momentum = -0.1}), Error);
  EXPECT_THROW(Sgd(m, SgdConfig{.weight_decay = -1}), Error);
  EXPECT_THROW(Sgd(m, SgdConfig{.nesterov = true}), Error);  // nesterov without momentum
  Sgd ok(m, SgdConfig{.momentum = 0.9});
  EXPECT_THROW(ok.step(-0.1), Error);
  EXPECT_THROW(ok.step(std::nan("")), Error);
}

}  // namespace
}  // namespace engine::optim
