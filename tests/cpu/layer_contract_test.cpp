// The layer contract's plumbing, on the CPU: parameters as views of one flat buffer, initialization, the
// grad-ready hook (order, once each, after the gradient is final), needs_input_grad, the residual block's
// branches, and errors that name the layer. The arithmetic itself is the reference kernels' (tested in their
// own suites); what is tested here is the wiring around it. The modes (train, eval, inference), saved state
// and the loss are in layer_modes_test.cpp.

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

using testing::cpu_context;
using testing::host_values;
using testing::random_labels;
using testing::random_tensor;

Model finalized_small_net(DType dtype = DType::F32, std::uint64_t seed = 11) {
  Model m("small_net", testing::small_test_net(), {3, 8, 8});
  m.finalize(cpu_context(dtype), seed);
  return m;
}

TEST(LayerContract, ParametersAreAlignedViewsOfOneFlatBuffer) {
  Model m = finalized_small_net();
  const std::vector<Parameter>& ps = m.parameters();
  // conv(w,b), bn(w,b), block: conv1.w, bn1(w,b), conv2.w, bn2(w,b), shortcut.0.w, shortcut.1(w,b), 2 linears
  // (w,b).
  ASSERT_EQ(ps.size(), 4u + 9u + 4u);
  std::int64_t end = 0, total = 0;
  for (const Parameter& p : ps) {
    EXPECT_TRUE(p.value.shares_storage_with(m.flat_parameters())) << p.name;
    EXPECT_TRUE(p.grad.shares_storage_with(m.flat_gradients())) << p.name;
    EXPECT_EQ(p.offset % kParameterAlignment, 0) << p.name;
    EXPECT_GE(p.offset, end) << p.name << " overlaps the parameter before it";
    // The views sit exactly at the offset: value and grad share it.
    EXPECT_EQ(static_cast<char*>(p.value.raw_data()) - static_cast<char*>(m.flat_parameters().raw_data()),
              p.offset * 4)
        << p.name;
    EXPECT_EQ(static_cast<char*>(p.grad.raw_data()) - static_cast<char*>(m.flat_gradients().raw_data()),
              p.offset * 4)
        << p.name;
    end = p.offset + p.value.numel();
    total += p.value.numel();
  }
  EXPECT_LE(end, m.flat_parameters().numel());
  EXPECT_EQ(total, m.parameter_count());
  // The buffers are views of the flat buffer of buffers, back to back.
  std::int64_t buffer_end = 0;
  for (const Buffer& b : m.buffers()) {
    EXPECT_TRUE(b.value.shares_storage_with(m.flat_buffers())) << b.name;
    EXPECT_EQ(b.offset, buffer_end) << b.name;
    buffer_end += b.value.numel();
  }
  EXPECT_EQ(buffer_end, m.flat_buffers().numel());
  // Writing through the flat buffer is writing the parameter the layer uses.
  m.flat_parameters().data<float>()[ps[2].offset] = 42.0f;  // BN gamma[0]
  const auto& bn = static_cast<const BatchNorm2d&>(static_cast<Sequential&>(m.root()).at(1));
  EXPECT_EQ(bn.parameter_slots()[0].value.data<float>()[0], 42.0f);
}

TEST(LayerContract, BackwardWritesGradientsIntoTheFlatBufferAndPaddingStaysZero) {
  Model m = finalized_small_net();
  const Tensor x = random_tensor({2, 3, 8, 8}, DType::F32, 1);
  Tensor(m.flat_gradients()).fill_bytes(0);  // a view of the same storage
  const Tensor y = m.forward(x, Mode::Train);
  m.backward(random_tensor(y.shape(), DType::F32, 2));
  std::vector<bool> covered(static_cast<std::size_t>(m.flat_gradients().numel()), false);
  for (const Parameter& p : m.parameters()) {
    const std::vector<double> g = host_values(p.grad);
    const auto* conv = dynamic_cast<const Conv2d*>(p.layer);
    if (conv != nullptr && conv->bias_folded() && p.name.ends_with(".bias")) {
      // Folded into the BatchNorm after it (layers/fusion.h): its training gradient is exactly 0.
      EXPECT_TRUE(std::all_of(g.begin(), g.end(), [](double v) { return v == 0.0; })) << p.name;
    } else {
      EXPECT_TRUE(std::any_of(g.begin(), g.end(), [](double v) { return v != 0.0; }))
          << p.name << " got no gradient";
    }
    for (std::int64_t i = 0; i < p.grad.numel(); ++i) covered[static_cast<std::size_t>(p.offset + i)] = true;
  }
  const std::vector<double> flat = host_values(m.flat_gradients());
  for (std::size_t i = 0; i < flat.size(); ++i) {
    if (!covered[i]) {
      EXPECT_EQ(flat[i], 0.0) << "padding element " << i << " was written";
    }
  }
}

TEST(LayerContract, InitializationFollowsPyTorchDefaultsAndTheSeed) {
  Model a = finalized_small_net(DType::F32, 5);
  Model b = finalized_small_net(DType::F32, 5);
  Model c = finalized_small_net(DType::F32, 6);
  Model d = finalized_small_net(DType::F64, 5);
  EXPECT_EQ(host_values(a.flat_parameters()), host_values(b.flat_parameters())) << "same seed, same weights";
  EXPECT_NE(host_values(a.flat_parameters()), host_values(c.flat_parameters()));
  for (std::size_t k = 0; k < a.parameters().size(); ++k) {
    const Parameter& p = a.parameters()[k];
    const std::vector<double> v = host_values(p.value);
    const std::vector<double> v64 = host_values(d.parameters()[k].value);
    for (std::size_t i = 0; i < v.size(); ++i) {
      ASSERT_EQ(v[i], static_cast<double>(static_cast<float>(v64[i])))
          << p.name << ": float32 is float64 rounded";
    }
    const std::string leaf = p.name.substr(p.name.rfind('.') + 1);
    const bool batchnorm = p.layer->kind() == "BatchNorm2d";
    if (batchnorm) {
      for (double e : v) EXPECT_EQ(e, leaf == "weight" ? 1.0 : 0.0) << p.name;
      continue;
    }
    // Conv2d/Linear: U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for weight and bias; fan_in = the weight's row size.
    const Shape& ws = p.layer->parameter_slots()[0].shape;
    const double fan_in = static_cast<double>(shape_numel(ws)) / static_cast<double>(ws[0]);
    const double bound = 1.0 / std::sqrt(fan_in);
    double lo = 1e9, hi = -1e9;
    for (double e : v) lo = std::min(lo, e), hi = std::max(hi, e);
    EXPECT_GE(lo, -bound) << p.name;
    EXPECT_LE(hi, bound) << p.name;
    if (v.size() >= 100) {  // spread over most of the interval
      EXPECT_LT(lo, -0.8 * bound) << p.name;
      EXPECT_GT(hi, 0.8 * bound) << p.name;
    }
  }
  for (const Buffer& buf : a.buffers()) {
    const double want = buf.name.ends_with("running_var") ? 1.0 : 0.0;
    for (double e : host_values(buf.value)) EXPECT_EQ(e, want) << buf.name;
  }
}

// The hook fires once per parameter, last parameter first, and only when the gradient is final: at that
// moment the gradients of every EARLIER layer are still the poison, and nothing later changes this one.
TEST(LayerContract, GradReadyHookFiresInReverseOnceEachWhenTheGradientIsFinal) {
  Model m = finalized_small_net();
  const std::vector<Parameter>& ps = m.parameters();
  std::vector<std::size_t> order;
  std::vector<std::vector<double>> at_hook(ps.size());
  m.set_grad_ready_hook([&](std::size_t i) {
    order.push_back(i);
    at_hook[i] = host_values(ps[i].grad);
    for (double v : at_hook[i])
      ASSERT_FALSE(std::isnan(v)) << ps[i].name << ": hook fired before its gradient";
    for (std::size_t j = 0; j < ps.size(); ++j) {
      if (ps[j].layer == ps[i].layer || j > i) continue;
      for (double v : host_values(ps[j].grad)) {
        ASSERT_TRUE(std::isnan(v)) << "when " << ps[i].name << " became ready, " << ps[j].name
                                   << " (an earlier layer) already had its gradient";
      }
    }
  });
  const Tensor x = random_tensor({2, 3, 8, 8}, DType::F32, 3);
  const Tensor y = m.forward(x, Mode::Train);
  Tensor(m.flat_gradients()).fill_bytes(0xFF);  // NaN everywhere
  m.backward(random_tensor(y.shape(), DType::F32, 4));
  ASSERT_EQ(order.size(), ps.size());
  for (std::size_t k = 0; k < order.size(); ++k) EXPECT_EQ(order[k], ps.size() - 1 - k) << "position " << k;
  for (std::size_t i = 0; i < ps.size(); ++i) {
    EXPECT_EQ(host_values(ps[i].grad), at_hook[i]) << ps[i].name << " changed after its hook fired";
  }
}

TEST(LayerContract, NeedsInputGradFalseSkipsTheInputGradient) {
  Model m = finalized_small_net();
  const Tensor x = random_tensor({2, 3, 8, 8}, DType::F32, 5);
  Tensor y = m.forward(x, Mode::Train);  // dropout offset 0
  EXPECT_FALSE(m.backward(random_tensor(y.shape(), DType::F32, 6)).defined()) << "the default: no dx";
  const std::vector<double> grads_without = host_values(m.flat_gradients());
  m.set_needs_input_grad(true);
  m.context().dropout_offset = 0;  // the same dropout mask as the first pass
  y = m.forward(x, Mode::Train);
  const Tensor dx = m.backward(random_tensor(y.shape(), DType::F32, 6));
  ASSERT_TRUE(dx.defined());
  EXPECT_EQ(dx.shape(), x.shape());
  // The flag changes nothing else: the parameter gradients are the same.
  EXPECT_EQ(host_values(m.flat_gradients()), grads_without);

  // A single layer as the model's root: its dx is skipped too.
  Model single("relu", std::make_unique<ReLU>());
  single.finalize(cpu_context(), 0);
  single.forward(x, Mode::Train);
  EXPECT_FALSE(single.backward(x).defined());
}

// The block computes relu(main(x) + shortcut(x)); its dx sums both branches. Checked against the reference
// ops run by hand on a block whose branches are single convolutions.
TEST(LayerContract, ResidualAddsTheBranchesAndSumsTheirGradients) {
  for (const bool identity : {false, true}) {
    auto main = std::make_unique<Sequential>();
    main->emplace_named<Conv2d>(
        "conv1",
        Conv2dOptions{.in_channels = 2, .out_channels = 2, .kernel_size = 3, .padding = 1, .bias = false});
    std::unique_ptr<Sequential> shortcut;
    if (!identity) {
      shortcut = std::make_unique<Sequential>();
      shortcut->emplace<Conv2d>(
          Conv2dOptions{.in_channels = 2, .out_channels = 2, .kernel_size = 1, .bias = false});
    }
    Model m("block", std::make_unique<Residual>(std::move(main), std::move(shortcut)));
    m.finalize(cpu_context(DType::F64), 3);
    m.set_needs_input_grad(true);
    const Tensor x = random_tensor({1, 2, 3, 3}, DType::F64, 10);
    const Tensor dy = random_tensor({1, 2, 3, 3}, DType::F64, 11);
    const std::vector<double> y = host_values(m.forward(x, Mode::Train));
    const std::vector<double> dx = host_values(m.backward(dy));

    const Conv2dShape s3{.n = 1, .c = 2, .h = 3, .w = 3, .k = 2, .r = 3, .s = 3, .pad_h = 1, .pad_w = 1};
    const Conv2dShape s1{.n = 1, .c = 2, .h = 3, .w = 3, .k = 2, .r = 1, .s = 1};
    const double* w3 = m.parameters()[0].value.data<double>();
    std::vector<double> a(18), b(18), sum(18), want_y(18), ds(18), da(18), db(18), dw(36), want_dx(18);
    const double* xp = x.data<double>();
    cpu::conv2d_forward<double>(s3, xp, w3, nullptr, a.data());
    if (identity) {
      b = host_values(x);
    } else {
      cpu::conv2d_forward<double>(s1, xp, m.parameters()[1].value.data<double>(), nullptr, b.data());
    }
    cpu::residual_add_forward<double>(a.data(), b.data(), sum.data(), 18);
    cpu::relu_forward<double>(sum.data(), want_y.data(), 18);
    EXPECT_EQ(y, want_y) << (identity ? "identity" : "conv") << " shortcut";

    cpu::relu_backward<double>(sum.data(), dy.data<double>(), ds.data(), 18);
    cpu::conv2d_backward<double>(s3, xp, w3, ds.data(), da.data(), dw.data(), nullptr);
    if (identity) {
      db = ds;
    } else {
      cpu::conv2d_backward<double>(s1, xp, m.parameters()[1].value.data<double>(), ds.data(), db.data(),
                                   dw.data(), nullptr);
    }
    cpu::residual_add_forward<double>(da.data(), db.data(), want_dx.data(), 18);
    EXPECT_EQ(dx, want_dx) << (identity ? "identity" : "conv") << " shortcut";
  }
}

using engine::testing::error_of;

TEST(LayerContract, ErrorsNameTheLayer) {
  Model m = finalized_small_net();
  const Tensor x4 = random_tensor({2, 4, 8, 8}, DType::F32, 1);
  const std::string wrong_channels = error_of([&] { m.forward(x4, Mode::Train); });
  EXPECT_NE(wrong_channels.find("Conv2d '0'"), std::string::npos) << wrong_channels;
  EXPECT_NE(wrong_channels.find("expects 3 input channels"), std::string::npos) << wrong_channels;

  const std::string wrong_dtype = error_of([&] {
    m.forward(random_tensor({2, 3, 8, 8}, DType::F64, 1), Mode::Eval);
  });
  EXPECT_NE(wrong_dtype.find("model's dtype float32"), std::string::npos) << wrong_dtype;

  const Tensor y = m.forward(random_tensor({2, 3, 8, 8}, DType::F32, 1), Mode::Train);
  const std::string wrong_dy = error_of([&] { m.backward(random_tensor({2, 4}, DType::F32, 1)); });
  EXPECT_NE(wrong_dy.find("does not match the last output [2, 3]"), std::string::npos) << wrong_dy;

  // Inside a residual block the path is the full one.
  auto bad = std::make_unique<Sequential>();
  bad->emplace<Conv2d>(Conv2dOptions{.in_channels = 3, .out_channels = 4, .kernel_size = 3, .padding = 1});
  bad->emplace<Flatten>();
  bad->emplace<Linear>(100, 2);
  Model mb("bad", std::move(bad));
  mb.finalize(cpu_context(), 0);
  const std::string wrong_features = error_of([&] {
    mb.forward(random_tensor({1, 3, 4, 4}, DType::F32, 1), Mode::Eval);
  });
  EXPECT_NE(wrong_features.find("Linear '2': expects 100 input features, got an input [1, 64]"),
            std::string::npos)
      << wrong_features;

  Model not_finalized("nf", testing::small_test_net());
  EXPECT_NE(error_of([&] { not_finalized.forward(x4, Mode::Eval); }).find("finalize"), std::string::npos);
  EXPECT_NE(error_of([&] {
              Model tiny("relu", std::make_unique<ReLU>());
              tiny.finalize(cpu_context(DType::I32), 0);
            }).find("does not run int32"),
            std::string::npos);
  EXPECT_NE(error_of([] { BatchNorm2d bn(0); }).find("BatchNorm2d: num_features must be positive"),
            std::string::npos);
  EXPECT_NE(error_of([] { Dropout d(1.5); }).find("Dropout: p must be in [0, 1]"), std::string::npos);

  // BatchNorm in training needs more than one value per channel.
  auto one = std::make_unique<Sequential>();
  one->emplace<BatchNorm2d>(2);
  Model mbn("bn", std::move(one));
  mbn.finalize(cpu_context(), 0);
  EXPECT_NE(error_of([&] {
              mbn.forward(random_tensor({1, 2, 1, 1}, DType::F32, 1), Mode::Train);
            }).find("BatchNorm2d '0': expected more than 1 value per channel"),
            std::string::npos);
  EXPECT_NO_THROW(mbn.forward(random_tensor({1, 2, 1, 1}, DType::F32, 1), Mode::Eval));

  // Duplicate child names are refused where they are made.
  Sequential s;
  s.emplace_named<ReLU>("a");
  EXPECT_NE(error_of([&] { s.emplace_named<ReLU>("a"); }).find("two children named 'a'"), std::string::npos);
}

}  // namespace
}  // namespace engine::layers
