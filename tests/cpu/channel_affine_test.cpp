// ChannelAffine (y = x * scale[c] + shift[c]): the float64 reference against loops written here over
// (n, c, h, w), the fast float32 CPU kernels against the reference bit for bit (the same double arithmetic
// in the same order) on odd sizes below and above the threading threshold, NHWC against NCHW through the op,
// every output poisoned first; the layer's shapes refused by name; and a whole-model gradient check.

#include "kernels/cpu/channel_affine.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/cpu_fast/channel_affine.h"
#include "kernels/ops/channel_affine.h"
#include "kernels/ops/transpose.h"
#include "layers/channel_affine.h"
#include "tests/common/error_of.h"
#include "tests/common/float_checks.h"
#include "tests/common/test_data.h"
#include "tests/cpu/layer_model_checks.h"
#include "tests/cpu/layer_test_util.h"

namespace engine::layers {
namespace {

using engine::testing::expect_bitwise;
using engine::testing::uniform_floats;
using testing::cpu_context;
using testing::host_values;
using testing::random_tensor;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::vector<double> randoms(std::size_t n, std::uint32_t seed) {
  const std::vector<float> f = uniform_floats(n, seed, -2.0f, 2.0f);
  return {f.begin(), f.end()};
}

// The reference (scale and shift both, each alone) against direct loops over [n, c, i], float64.
TEST(ChannelAffineReference, EqualsLoopsOverNChannelsAndCells) {
  const ChannelAffineShape shapes[] = {{3, 5, 7 * 9}, {4, 7, 1}, {1, 1, 2 * 3 * 5 * 7}};
  for (const ChannelAffineShape& s : shapes) {
    const auto n = static_cast<std::size_t>(s.numel()), c = static_cast<std::size_t>(s.channels);
    const std::vector<double> x = randoms(n, 1), dy = randoms(n, 2), scale = randoms(c, 3),
                              shift = randoms(c, 4);
    for (const int halves : {3, 1, 2}) {  // bit 0: scale, bit 1: shift
      const double* sp = (halves & 1) ? scale.data() : nullptr;
      const double* tp = (halves & 2) ? shift.data() : nullptr;
      std::vector<double> y(n, kNaN), dx(n, kNaN), ds(c, kNaN), dt(c, kNaN);
      cpu::channel_affine_forward<double>(s, x.data(), sp, tp, y.data());
      cpu::channel_affine_backward<double>(s, x.data(), sp, dy.data(), dx.data(), ds.data(), dt.data());
      std::vector<double> want_ds(c, 0.0), want_dt(c, 0.0);
      for (std::int64_t o = 0; o < s.outer; ++o) {
        for (std::size_t ch = 0; ch < c; ++ch) {
          for (std::int64_t i = 0; i < s.inner; ++i) {
            const auto k =
                static_cast<std::size_t>((o * s.channels + static_cast<std::int64_t>(ch)) * s.inner + i);
            const double a = sp ? scale[ch] : 1.0, b = tp ? shift[ch] : 0.0;
            ASSERT_EQ(y[k], x[k] * a + b) << "y[" << k << "] halves " << halves;
            ASSERT_EQ(dx[k], dy[k] * a) << "dx[" << k << "]";
            want_ds[ch] += dy[k] * x[k];
            want_dt[ch] += dy[k];
          }
        }
      }
      for (std::size_t ch = 0; ch < c; ++ch) {
        EXPECT_NEAR(ds[ch], want_ds[ch], 1e-12) << "dscale[" << ch << "]";
        EXPECT_NEAR(dt[ch], want_dt[ch], 1e-12) << "dshift[" << ch << "]";
      }
    }
  }
}

TEST(CpuFastChannelAffine, EqualsTheReferenceBitwise) {
  // 945 elements (one thread), 2 * 7 * 61 * 41 = 35,014 (threaded), and one value for everything.
  const ChannelAffineShape shapes[] = {{3, 5, 63}, {2, 7, 61 * 41}, {1, 1, 3 * 11 * 13}};
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (const ChannelAffineShape& s : shapes) {
    const auto n = static_cast<std::size_t>(s.numel()), c = static_cast<std::size_t>(s.channels);
    const std::vector<float> x = uniform_floats(n, 5), dy = uniform_floats(n, 6),
                             scale = uniform_floats(c, 7), shift = uniform_floats(c, 8);
    std::vector<float> y(n, nan), y_ref(n, nan), dx(n, nan), dx_ref(n, nan);
    std::vector<float> ds(c, nan), ds_ref(c, nan), dt(c, nan), dt_ref(c, nan);
    cpu_fast::channel_affine_forward(s, x.data(), scale.data(), shift.data(), y.data());
    cpu::channel_affine_forward<float>(s, x.data(), scale.data(), shift.data(), y_ref.data());
    cpu_fast::channel_affine_backward(s, x.data(), scale.data(), dy.data(), dx.data(), ds.data(), dt.data());
    cpu::channel_affine_backward<float>(s, x.data(), scale.data(), dy.data(), dx_ref.data(), ds_ref.data(),
                                        dt_ref.data());
    const std::string at = " of " + std::to_string(n);
    expect_bitwise(y, y_ref, "y" + at);
    expect_bitwise(dx, dx_ref, "dx" + at);
    expect_bitwise(ds, ds_ref, "dscale" + at);
    expect_bitwise(dt, dt_ref, "dshift" + at);
  }
}

// The op on an NHWC x computes, element for element, what it computes on the NCHW x (float32 and float64).
TEST(ChannelAffineOp, NhwcEqualsNchw) {
  for (const DType dtype : {DType::F32, DType::F64}) {
    const ExecutionContext ctx = cpu_context(dtype);
    const Tensor x = random_tensor({3, 5, 7, 9}, dtype, 11), dy = random_tensor({3, 5, 7, 9}, dtype, 12);
    const Tensor scale = random_tensor({5, 1, 1}, dtype, 13), shift = random_tensor({5, 1, 1}, dtype, 14);
    std::vector<std::vector<double>> got[2];
    for (const Layout layout : {Layout::NCHW, Layout::NHWC}) {
      const Tensor xl = ops::to_layout(ctx, x, layout), dyl = ops::to_layout(ctx, dy, layout);
      Tensor y = Tensor::empty(x.shape(), dtype, Device::cpu(), nullptr, layout);
      Tensor dx = Tensor::empty(x.shape(), dtype, Device::cpu(), nullptr, layout);
      Tensor ds = testing::host_tensor(std::vector<double>(5, kNaN), {5, 1, 1}, dtype);
      Tensor dt = testing::host_tensor(std::vector<double>(5, kNaN), {5, 1, 1}, dtype);
      ops::channel_affine_forward(ctx, xl, scale, shift, y);
      ops::channel_affine_backward(ctx, xl, scale, dyl, dx, ds, dt);
      got[layout == Layout::NHWC].push_back(host_values(ops::to_layout(ctx, y, Layout::NCHW)));
      got[layout == Layout::NHWC].push_back(host_values(ops::to_layout(ctx, dx, Layout::NCHW)));
      got[layout == Layout::NHWC].push_back(host_values(ds));
      got[layout == Layout::NHWC].push_back(host_values(dt));
    }
    for (std::size_t k = 0; k < 4; ++k)
      EXPECT_EQ(got[1][k], got[0][k]) << "output " << k << " " << dtype_name(dtype);
  }
}

ChannelAffineOptions per_channel(const Shape& shape) {
  return {{true, shape, "scale", true}, {true, shape, "shift", true}};
}

TEST(ChannelAffineLayer, TakesPerChannelShapesByNumpyBroadcastingAndRefusesOthers) {
  EXPECT_EQ(ChannelAffine(per_channel({5, 1, 1})).output_shape({2, 5, 3, 4}), (Shape{2, 5, 3, 4}));
  EXPECT_EQ(ChannelAffine(per_channel({1, 5, 1, 1})).output_shape({2, 5, 3, 4}), (Shape{2, 5, 3, 4}));
  EXPECT_EQ(ChannelAffine(per_channel({5})).output_shape({2, 5}), (Shape{2, 5}));
  EXPECT_EQ(ChannelAffine(per_channel({1})).output_shape({2, 3, 4}), (Shape{2, 3, 4}))
      << "one value: any input";
  // numpy aligns the last axes: [5] meets W of [N, 5, 3, 4], not the channels.
  EXPECT_NE(engine::testing::error_of([] {
              ChannelAffine(per_channel({5})).output_shape({2, 5, 3, 5});
            }).find("its scale [5] does not broadcast one value per channel over the input [2, 5, 3, 5]"),
            std::string::npos);
  EXPECT_NE(engine::testing::error_of([] {
              ChannelAffine(per_channel({6, 1, 1})).output_shape({2, 5, 3, 4});
            }).find("does not broadcast one value per channel"),
            std::string::npos);
  EXPECT_NE(engine::testing::error_of([] {
              ChannelAffine({{true, {5, 1, 1}, "scale", true}, {true, {4, 1, 1}, "shift", true}});
            }).find("scale [5, 1, 1] and shift [4, 1, 1] differ in size"),
            std::string::npos);
  EXPECT_NE(engine::testing::error_of([] {
              ChannelAffine(ChannelAffineOptions{});
            }).find("needs a scale or a shift"),
            std::string::npos);
}

TEST(ChannelAffineLayer, AFixedValueIsABufferNotAParameter) {
  ChannelAffine fixed({{}, {true, {1}, "one", false}});
  EXPECT_TRUE(fixed.parameter_slots().empty());
  ASSERT_EQ(fixed.buffer_slots().size(), 1u);
  EXPECT_EQ(fixed.buffer_slots()[0].name, "one");
  EXPECT_EQ(ChannelAffine(per_channel({3, 1, 1})).parameter_slots().size(), 2u);
}

// conv -> x * scale + shift per channel -> a fixed scalar added -> flatten -> linear, element by element.
TEST(ChannelAffineLayer, ModelGradientCheck) {
  auto net = std::make_unique<Sequential>();
  net->emplace<Conv2d>(Conv2dOptions{.in_channels = 2, .out_channels = 3, .kernel_size = 3, .padding = 1});
  net->emplace_named<ChannelAffine>("affine", per_channel({3, 1, 1}));
  net->emplace_named<ChannelAffine>("plus", ChannelAffineOptions{{}, {true, {1}, "one", false}});
  net->emplace<Flatten>();
  net->emplace<Linear>(3 * 5 * 7, 3);
  Model m("affine_net", std::move(net), {2, 5, 7});
  m.finalize(cpu_context(DType::F64), 3);
  // Values away from 1 and 0, so a gradient that ignored them would show.
  testing::set_values(m.parameters()[2].value, {0.5, -1.5, 2.0});
  testing::set_values(m.parameters()[3].value, {0.25, -0.75, 1.0});
  testing::expect_model_gradients(m, {2, 5, 7}, 3, /*min_checked=*/0,
                                  /*max_elements_per_input=*/0);  // every element
}

}  // namespace
}  // namespace engine::layers
