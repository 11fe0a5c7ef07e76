// ChannelLayerNorm (layer normalization over each pixel's channels, convnext's LayerNorm2d) and ChannelLinear
// (nn.Linear on each pixel's channels): the float64 reference against loops written here, the fast float32
// CPU kernels (kernels/channel_layernorm_math.h, the formulas the CUDA threads run) against the reference on
// odd sizes below and above the threading threshold, NHWC against NCHW through the op, every output
// poisoned first; the layers' shapes refused by name; and a whole-model gradient check of both in float64.

#include "kernels/cpu/channel_layernorm.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/cpu_fast/channel_layernorm.h"
#include "kernels/ops/channel_layernorm.h"
#include "kernels/ops/transpose.h"
#include "layers/channel_layernorm.h"
#include "layers/channel_linear.h"
#include "layers/gelu.h"
#include "tests/common/error_of.h"
#include "tests/common/test_data.h"
#include "tests/cpu/layer_model_checks.h"
#include "tests/cpu/layer_test_util.h"

namespace engine::layers {
namespace {

using engine::testing::uniform_floats;
using testing::cpu_context;
using testing::host_values;
using testing::random_tensor;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kEps = 1e-6;

std::vector<double> randoms(std::size_t n, std::uint32_t seed) {
  const std::vector<float> f = uniform_floats(n, seed, -2.0f, 2.0f);
  return {f.begin(), f.end()};
}

// The pixel (o, i)'s channel c in [outer, channels, inner].
std::size_t at(const ChannelAffineShape& s, std::int64_t o, std::int64_t c, std::int64_t i) {
  return static_cast<std::size_t>((o * s.channels + c) * s.inner + i);
}

// The reference against the definition: y by the formula, dx by central differences of sum(y * dy) (the
// loss whose gradient backward computes), dgamma and dbeta by their sums.
TEST(ChannelLayerNormReference, EqualsTheDefinition) {
  const ChannelAffineShape shapes[] = {{3, 5, 7}, {2, 7, 1}, {1, 3, 5}};
  for (const ChannelAffineShape& s : shapes) {
    const auto n = static_cast<std::size_t>(s.numel()), c = static_cast<std::size_t>(s.channels);
    const std::vector<double> x = randoms(n, 1), dy = randoms(n, 2), gamma = randoms(c, 3),
                              beta = randoms(c, 4);
    std::vector<double> y(n, kNaN), dx(n, kNaN), dg(c, kNaN), db(c, kNaN);
    cpu::channel_layernorm_forward<double>(s, kEps, x.data(), gamma.data(), beta.data(), y.data());
    cpu::channel_layernorm_backward<double>(s, kEps, x.data(), gamma.data(), dy.data(), dx.data(), dg.data(),
                                            db.data());
    std::vector<double> want_dg(c, 0.0), want_db(c, 0.0);
    for (std::int64_t o = 0; o < s.outer; ++o) {
      for (std::int64_t i = 0; i < s.inner; ++i) {
        double mean = 0.0, var = 0.0;
        for (std::int64_t k = 0; k < s.channels; ++k) mean += x[at(s, o, k, i)] / static_cast<double>(c);
        for (std::int64_t k = 0; k < s.channels; ++k)
          var += (x[at(s, o, k, i)] - mean) * (x[at(s, o, k, i)] - mean) / static_cast<double>(c);
        for (std::int64_t k = 0; k < s.channels; ++k) {
          const auto ck = static_cast<std::size_t>(k);
          const double xhat = (x[at(s, o, k, i)] - mean) / std::sqrt(var + kEps);
          EXPECT_NEAR(y[at(s, o, k, i)], xhat * gamma[ck] + beta[ck], 1e-12);
          want_dg[ck] += dy[at(s, o, k, i)] * xhat;
          want_db[ck] += dy[at(s, o, k, i)];
        }
      }
    }
    for (std::size_t k = 0; k < c; ++k) {
      EXPECT_NEAR(dg[k], want_dg[k], 1e-12) << "dgamma[" << k << "]";
      EXPECT_NEAR(db[k], want_db[k], 1e-12) << "dbeta[" << k << "]";
    }
    // Central differences, step h: the truncation error is O(h^2) times third derivatives of order 1 (the
    // inputs and gamma are O(1), the variance is not small), the rounding error O(2^-52 / h): h = 1e-5
    // leaves both below 1e-7 of the values.
    const double h = 1e-5;
    for (std::size_t k = 0; k < n; ++k) {
      auto loss = [&](double delta) {
        std::vector<double> xp = x, yp(n);
        xp[k] += delta;
        cpu::channel_layernorm_forward<double>(s, kEps, xp.data(), gamma.data(), beta.data(), yp.data());
        double sum = 0.0;
        for (std::size_t j = 0; j < n; ++j) sum += yp[j] * dy[j];
        return sum;
      };
      EXPECT_NEAR(dx[k], (loss(h) - loss(-h)) / (2 * h), 1e-7) << "dx[" << k << "]";
    }
  }
}

// The fast kernels run the reference's double arithmetic per pixel and round each output once: within half
// a float ulp of the float64 reference fed the same floats, plus the double-order differences (the same
// operations up to contraction: far below 2^-40 of the output's scale).
TEST(CpuFastChannelLayerNorm, IsTheReferenceRoundedOnce) {
  // 3 x 5 x 63 (one thread), 2 x 7 x 61*41 (threaded), [N, F].
  const ChannelAffineShape shapes[] = {{3, 5, 63}, {2, 7, 61 * 41}, {9, 11, 1}};
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (const ChannelAffineShape& s : shapes) {
    const auto n = static_cast<std::size_t>(s.numel()), c = static_cast<std::size_t>(s.channels);
    const std::vector<float> x = uniform_floats(n, 5), dy = uniform_floats(n, 6),
                             gamma = uniform_floats(c, 7), beta = uniform_floats(c, 8);
    const std::vector<double> xd(x.begin(), x.end()), dyd(dy.begin(), dy.end()),
        gd(gamma.begin(), gamma.end()), bd(beta.begin(), beta.end());
    std::vector<float> y(n, nan), dx(n, nan), dg(c, nan), db(c, nan);
    std::vector<double> y_ref(n), dx_ref(n), dg_ref(c), db_ref(c);
    cpu_fast::channel_layernorm_forward(s, kEps, x.data(), gamma.data(), beta.data(), y.data());
    cpu_fast::channel_layernorm_backward(s, kEps, x.data(), gamma.data(), dy.data(), dx.data(), dg.data(),
                                         db.data());
    cpu::channel_layernorm_forward<double>(s, kEps, xd.data(), gd.data(), bd.data(), y_ref.data());
    cpu::channel_layernorm_backward<double>(s, kEps, xd.data(), gd.data(), dyd.data(), dx_ref.data(),
                                            dg_ref.data(), db_ref.data());
    auto expect_close = [](const std::vector<float>& got, const std::vector<double>& want, const char* what) {
      double scale = 0.0;
      for (const double v : want) scale = std::max(scale, std::abs(v));
      for (std::size_t k = 0; k < got.size(); ++k) {
        EXPECT_LE(std::abs(static_cast<double>(got[k]) - want[k]),
                  0x1p-24 * std::abs(want[k]) + 0x1p-40 * scale)
            << what << "[" << k << "] of " << got.size();
      }
    };
    expect_close(y, y_ref, "y");
    expect_close(dx, dx_ref, "dx");
    expect_close(dg, dg_ref, "dgamma");
    expect_close(db, db_ref, "dbeta");
  }
}

// The op on an NHWC x computes, element for element, what it computes on the NCHW x (float32 and float64:
// the same operations on each pixel in the same order).
TEST(ChannelLayerNormOp, NhwcEqualsNchw) {
  for (const DType dtype : {DType::F32, DType::F64}) {
    const ExecutionContext ctx = cpu_context(dtype);
    const Tensor x = random_tensor({3, 5, 7, 9}, dtype, 11), dy = random_tensor({3, 5, 7, 9}, dtype, 12);
    const Tensor gamma = random_tensor({5}, dtype, 13), beta = random_tensor({5}, dtype, 14);
    std::vector<std::vector<double>> got[2];
    for (const Layout layout : {Layout::NCHW, Layout::NHWC}) {
      const Tensor xl = ops::to_layout(ctx, x, layout), dyl = ops::to_layout(ctx, dy, layout);
      Tensor y = Tensor::empty(x.shape(), dtype, Device::cpu(), nullptr, layout);
      Tensor dx = Tensor::empty(x.shape(), dtype, Device::cpu(), nullptr, layout);
      Tensor dg = testing::host_tensor(std::vector<double>(5, kNaN), {5}, dtype);
      Tensor db = testing::host_tensor(std::vector<double>(5, kNaN), {5}, dtype);
      ops::channel_layernorm_forward(ctx, kEps, xl, gamma, beta, y);
      ops::channel_layernorm_backward(ctx, kEps, xl, gamma, dyl, dx, dg, db);
      got[layout == Layout::NHWC].push_back(host_values(ops::to_layout(ctx, y, Layout::NCHW)));
      got[layout == Layout::NHWC].push_back(host_values(ops::to_layout(ctx, dx, Layout::NCHW)));
      got[layout == Layout::NHWC].push_back(host_values(dg));
      got[layout == Layout::NHWC].push_back(host_values(db));
    }
    for (std::size_t k = 0; k < 4; ++k)
      EXPECT_EQ(got[1][k], got[0][k]) << "output " << k << " " << dtype_name(dtype);
  }
}

TEST(ChannelLayerNormLayer, HasPyTorchsParametersAndRefusesOtherChannelCounts) {
  const ChannelLayerNorm ln(6, 1e-6);
  ASSERT_EQ(ln.parameter_slots().size(), 2u);
  EXPECT_EQ(ln.parameter_slots()[0].name, "weight");
  EXPECT_EQ(ln.parameter_slots()[0].shape, (Shape{6}));
  EXPECT_EQ(ln.parameter_slots()[1].name, "bias");
  EXPECT_EQ(ln.output_shape({2, 6, 3, 3}), (Shape{2, 6, 3, 3}));
  EXPECT_EQ(ln.output_shape({2, 6}), (Shape{2, 6}));
  EXPECT_NE(engine::testing::error_of([&] {
              ln.output_shape({2, 5, 3, 3});
            }).find("expects an input [N, 6, H, W] or [N, 6], got [2, 5, 3, 3]"),
            std::string::npos);
  EXPECT_NE(
      engine::testing::error_of([] { ChannelLayerNorm(4, 0.0); }).find("epsilon 0 is not a positive number"),
      std::string::npos);
  const ChannelLinear fc(6, 4, true);
  EXPECT_EQ(fc.parameter_slots()[0].shape, (Shape{4, 6})) << "nn.Linear's [out, in]";
  EXPECT_EQ(fc.output_shape({2, 6, 3, 5}), (Shape{2, 4, 3, 5}));
  EXPECT_NE(engine::testing::error_of([&] {
              fc.output_shape({2, 6});
            }).find("expects an input [N, 6, H, W]"),
            std::string::npos);
}

// ChannelLinear in float64 against loops: y[n, o, p] = sum_i W[o, i] x[n, i, p] + b[o], and its gradients.
TEST(ChannelLinearLayer, IsALinearLayerOnEachPixel) {
  auto net = std::make_unique<Sequential>();
  net->emplace_named<ChannelLinear>("fc", 3, 4, true);
  Model m("fc", std::move(net), {3, 2, 5});
  m.finalize(cpu_context(DType::F64), 3);
  const Tensor x = random_tensor({2, 3, 2, 5}, DType::F64, 5);
  const Tensor dy = random_tensor({2, 4, 2, 5}, DType::F64, 6);
  const std::vector<double> y = host_values(m.forward(x, Mode::Train));
  m.backward(dy);
  const std::vector<double> w = host_values(m.parameters()[0].value),
                            b = host_values(m.parameters()[1].value);
  const std::vector<double> dw = host_values(m.parameters()[0].grad),
                            db = host_values(m.parameters()[1].grad);
  const std::vector<double> xv = host_values(x), dyv = host_values(dy);
  std::vector<double> want_dw(12, 0.0), want_db(4, 0.0);
  for (int n = 0; n < 2; ++n) {
    for (int o = 0; o < 4; ++o) {
      for (int p = 0; p < 10; ++p) {
        double sum = b[static_cast<std::size_t>(o)];
        const double g = dyv[static_cast<std::size_t>((n * 4 + o) * 10 + p)];
        for (int i = 0; i < 3; ++i) {
          sum += w[static_cast<std::size_t>(o * 3 + i)] * xv[static_cast<std::size_t>((n * 3 + i) * 10 + p)];
          want_dw[static_cast<std::size_t>(o * 3 + i)] +=
              g * xv[static_cast<std::size_t>((n * 3 + i) * 10 + p)];
        }
        want_db[static_cast<std::size_t>(o)] += g;
        EXPECT_NEAR(y[static_cast<std::size_t>((n * 4 + o) * 10 + p)], sum, 1e-12);
      }
    }
  }
  for (std::size_t k = 0; k < 12; ++k) EXPECT_NEAR(dw[k], want_dw[k], 1e-12) << "dW[" << k << "]";
  for (std::size_t k = 0; k < 4; ++k) EXPECT_NEAR(db[k], want_db[k], 1e-12) << "db[" << k << "]";
}

// A CNBlock's pointwise half: conv -> LayerNorm over channels -> Linear 4 -> 6 -> GELU -> Linear 6 -> 4 ->
// flatten -> linear, element by element in float64 (dx of both layers and every parameter).
TEST(ChannelLayerNormLayer, ModelGradientCheck) {
  auto net = std::make_unique<Sequential>();
  net->emplace<Conv2d>(Conv2dOptions{.in_channels = 2, .out_channels = 4, .kernel_size = 3, .padding = 1});
  net->emplace_named<ChannelLayerNorm>("norm", 4, 1e-6);
  net->emplace_named<ChannelLinear>("fc1", 4, 6, true);
  net->emplace<GELU>();
  net->emplace_named<ChannelLinear>("fc2", 6, 4, true);
  net->emplace<Flatten>();
  net->emplace<Linear>(4 * 3 * 5, 3);
  Model m("cnblock", std::move(net), {2, 3, 5});
  m.finalize(cpu_context(DType::F64), 3);
  // gamma and beta away from 1 and 0, so a gradient that ignored them would show.
  testing::set_values(m.parameters()[2].value, {0.5, -1.5, 2.0, 1.25});
  testing::set_values(m.parameters()[3].value, {0.25, -0.75, 1.0, -0.5});
  testing::expect_model_gradients(m, {2, 3, 5}, 3, /*min_checked=*/0,
                                  /*max_elements_per_input=*/0);  // every element
}

}  // namespace
}  // namespace engine::layers
