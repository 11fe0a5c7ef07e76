// The Conv2d layer with rectangular kernels and per-axis stride and padding (PyTorch's
// nn.Conv2d(kernel_size=(1, 7), padding=(0, 3)), inception_v3's): its weight [out, in / groups, kh, kw] and
// fan-in, its options refused by name, each layer's float32 forward and backward (the fast CPU path) against
// the float64 reference on odd sizes with the outputs poisoned, a whole-model gradient check in float64, and
// ONNX out and back in (Conv's kernel_shape, strides and pads per axis). The kernels' own rectangular cases:
// tests/cpu/cpu_fast_kernels_test.cpp (CpuFastConv2d) and tests/gpu/cuda_conv2d_test.cpp.

#include <cmath>
#include <limits>
#include <string>

#include <gtest/gtest.h>

#include "kernels/cpu/conv2d.h"
#include "tests/common/error_of.h"
#include "tests/common/onnx_skip.h"
#include "tests/cpu/conv2d_rect_net.h"
#include "tests/cpu/layer_model_checks.h"

namespace engine::layers {
namespace {

using engine::testing::error_of;
using testing::k1x7;
using testing::k3x1;
using testing::k7x1;
using testing::rect_net;

TEST(Conv2dRectLayer, WeightShapesFanInOutputShapeAndRefusals) {
  Model m("rect", rect_net(), {3, 9, 11});
  m.finalize(testing::cpu_context(DType::F32), 1);
  EXPECT_EQ(m.parameters()[0].value.shape(), (Shape{4, 3, 1, 7}));  // conv1x7.weight
  EXPECT_EQ(m.parameters()[2].value.shape(), (Shape{5, 4, 7, 1}));  // conv7x1.weight (no bias)
  EXPECT_EQ(m.parameters()[3].value.shape(), (Shape{4, 5, 3, 1}));  // conv3x1.weight
  // PyTorch's U(-1/sqrt(fan_in), 1/sqrt(fan_in)), fan_in = in * kh * kw = 3 * 1 * 7: 84 draws fill most of
  // it.
  double largest = 0.0;
  for (const double v : testing::host_values(m.parameters()[0].value))
    largest = std::max(largest, std::fabs(v));
  EXPECT_LE(largest, 1.0 / std::sqrt(21.0));
  EXPECT_GT(largest, 0.8 / std::sqrt(21.0));
  EXPECT_EQ(m.forward(testing::random_tensor({2, 3, 9, 11}, DType::F32, 1), Mode::Inference).shape(),
            (Shape{2, 3}));
  EXPECT_EQ(Conv2d(k3x1).output_shape({2, 5, 9, 11}), (Shape{2, 4, 5, 11}));

  EXPECT_NE(error_of([] {
              Conv2d(Conv2dOptions{.in_channels = 1, .out_channels = 1, .kernel_size = 3, .kernel_w = 0});
            }).find("kernel 3x0"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              Conv2d(Conv2dOptions{.in_channels = 1, .out_channels = 1, .kernel_size = 3, .stride_w = 0});
            }).find("stride (1, 0)"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              Conv2d(Conv2dOptions{.in_channels = 1, .out_channels = 1, .kernel_size = 3, .padding_w = -1});
            }).find("padding (0, -1)"),
            std::string::npos);
  EXPECT_NE(
      error_of([] {
        Conv2d(Conv2dOptions{
            .in_channels = 2, .out_channels = 4, .kernel_size = 1, .identity_init = true, .kernel_w = 3});
      }).find("identity_init is for dense convolutions with square kernels (groups 1, kernel 1x3)"),
      std::string::npos);
  const Conv2dOptions unpadded{.in_channels = 1, .out_channels = 1, .kernel_size = 1, .kernel_w = 7};
  EXPECT_NE(error_of([&] {
              Conv2d(unpadded).output_shape({1, 1, 4, 5});
            }).find("a 1x7 kernel (dilation 1) with padding 0 does not fit in the input [1, 1, 4, 5]"),
            std::string::npos);
  EXPECT_EQ(Conv2d(unpadded).output_shape({1, 1, 4, 7}), (Shape{1, 1, 4, 1}));
  EXPECT_EQ(Conv2d(k1x7).output_shape({1, 3, 4, 1}), (Shape{1, 4, 4, 1}));  // 1 + 2 * 3 = 7 columns
}

Conv2dShape geometry_of(const Conv2dOptions& o, const Shape& x) {
  return {.n = static_cast<int>(x[0]),
          .c = static_cast<int>(x[1]),
          .h = static_cast<int>(x[2]),
          .w = static_cast<int>(x[3]),
          .k = o.out_channels,
          .r = o.kernel_height(),
          .s = o.kernel_width(),
          .stride_h = o.stride_height(),
          .stride_w = o.stride_width(),
          .pad_h = o.padding_height(),
          .pad_w = o.padding_width()};
}

std::vector<double> absolute(std::vector<double> v) {
  for (double& x : v) x = std::fabs(x);
  return v;
}

// |got - reference| <= (terms + 2) 2^-24 magnitude: a float32 sum of `terms` products of float32 values (any
// order) is within (terms - 1) 2^-24 of the sum of their magnitudes, and its rounding to float32 adds one
// more 2^-24 |y| (the bias, one more term). magnitude: the same op on |inputs|, in float64. A wrong tap or
// index moves an output by a whole term, ~magnitude / terms.
void expect_close(const std::vector<double>& got, const std::vector<double>& reference,
                  const std::vector<double>& magnitude, int terms, const std::string& what) {
  ASSERT_EQ(got.size(), reference.size()) << what;
  int bad = 0;
  for (std::size_t i = 0; i < got.size() && bad < 5; ++i) {
    const double tol = (terms + 2) * 0x1p-24 * magnitude[i];
    if (!(std::fabs(got[i] - reference[i]) <= tol)) {
      ADD_FAILURE() << what << "[" << i << "]: " << got[i] << " vs reference " << reference[i] << " (tol "
                    << tol << ")";
      ++bad;
    }
  }
}

// One Conv2d layer in a float32 model (kernels/cpu_fast: oneDNN) against kernels/cpu's float64 reference
// on the same float32 values: y, dx, dw, db. The gradients and every buffer the layer writes start as NaN
// (the model's gradients poisoned; a first step on other values leaves its arena buffers behind).
void expect_layer_matches_reference(const Conv2dOptions& o, const Shape& x_shape) {
  auto net = std::make_unique<Sequential>();
  net->emplace_named<Conv2d>("conv", o);
  Model m("one", std::move(net), {x_shape[1], x_shape[2], x_shape[3]});
  m.finalize(testing::cpu_context(DType::F32), 11);
  m.set_needs_input_grad(true);
  const Conv2dShape g = geometry_of(o, x_shape);
  const Shape y_shape{g.n, g.k, g.p(), g.q()};
  const std::string what = fmt::format("{} stride {} padding {} on {}", kernel_str(o), stride_str(o),
                                       padding_str(o), shape_str(x_shape));

  const Tensor other = testing::random_tensor(x_shape, DType::F32, 3);
  m.forward(other, Mode::Train);
  m.backward(testing::random_tensor(y_shape, DType::F32, 4));
  testing::set_values(m.flat_gradients(),
                      std::vector<double>(static_cast<std::size_t>(m.flat_gradients().numel()),
                                          std::numeric_limits<double>::quiet_NaN()));
  const Tensor x = testing::random_tensor(x_shape, DType::F32, 5);
  const Tensor dy = testing::random_tensor(y_shape, DType::F32, 6);
  const std::vector<double> y = testing::host_values(m.forward(x, Mode::Train));
  const std::vector<double> dx = testing::host_values(m.backward(dy));

  const std::vector<double> xv = testing::host_values(x), dyv = testing::host_values(dy);
  const std::vector<double> wv = testing::host_values(m.parameters()[0].value);
  const std::vector<double> bv =
      o.bias ? testing::host_values(m.parameters()[1].value) : std::vector<double>(g.k, 0.0);
  std::vector<double> y_ref(g.y_size()), y_mag(g.y_size()), dx_ref(g.x_size()), dx_mag(g.x_size()),
      dw_ref(g.w_size()), dw_mag(g.w_size()), db_ref(g.k), db_mag(g.k);
  cpu::conv2d_forward<double>(g, xv.data(), wv.data(), bv.data(), y_ref.data());
  cpu::conv2d_backward<double>(g, xv.data(), wv.data(), dyv.data(), dx_ref.data(), dw_ref.data(),
                               db_ref.data());
  const std::vector<double> ax = absolute(xv), aw = absolute(wv), ab = absolute(bv), ady = absolute(dyv);
  cpu::conv2d_forward<double>(g, ax.data(), aw.data(), ab.data(), y_mag.data());
  cpu::conv2d_backward<double>(g, ax.data(), aw.data(), ady.data(), dx_mag.data(), dw_mag.data(),
                               db_mag.data());

  const int taps = g.r * g.s;
  expect_close(y, y_ref, y_mag, g.c * taps, what + ": y");
  expect_close(dx, dx_ref, dx_mag, g.k * taps, what + ": dx");
  expect_close(testing::host_values(m.parameters()[0].grad), dw_ref, dw_mag, g.n * g.p() * g.q(),
               what + ": dw");
  if (o.bias)
    expect_close(testing::host_values(m.parameters()[1].grad), db_ref, db_mag, g.n * g.p() * g.q(),
                 what + ": db");
}

TEST(Conv2dRectLayer, FastCpuForwardAndBackwardMatchTheReference) {
  expect_layer_matches_reference(k1x7, {3, 3, 9, 11});
  expect_layer_matches_reference(k7x1, {3, 4, 9, 11});
  expect_layer_matches_reference(k3x1, {2, 5, 9, 11});
  // Unequal padding with a square kernel, and a stride along the width only.
  expect_layer_matches_reference(
      Conv2dOptions{.in_channels = 3, .out_channels = 5, .kernel_size = 3, .padding = 2, .padding_w = 0},
      {2, 3, 7, 9});
  expect_layer_matches_reference(
      Conv2dOptions{
          .in_channels = 3, .out_channels = 5, .kernel_size = 5, .padding = 1, .kernel_w = 3, .stride_w = 3},
      {2, 3, 7, 13});
  // A square convolution is unchanged by the options (kernel_w etc. unset or equal).
  expect_layer_matches_reference(
      Conv2dOptions{
          .in_channels = 3, .out_channels = 5, .kernel_size = 3, .stride = 2, .padding = 1, .kernel_w = 3},
      {2, 3, 9, 9});
}

TEST(Conv2dRectLayer, ModelGradientCheck) {
  Model m("rect", rect_net(), {3, 9, 11});
  m.finalize(testing::cpu_context(DType::F64), 3);
  testing::expect_model_gradients(m, {3, 9, 11}, 3, 150);
}

TEST(Conv2dRectLayer, OnnxOutAndBackInIsTheSameNetwork) {
  SKIP_WITHOUT_ONNX();
  for (const DType dtype : {DType::F64, DType::F32}) {
    const ExecutionContext ctx = testing::cpu_context(dtype);
    Model net("rect", rect_net(), {3, 9, 11});
    net.finalize(ctx, 5);
    Model imported = testing::expect_onnx_round_trip(net, ctx, "rect", {3, 9, 11}, 3);
    EXPECT_EQ(imported.parameters()[0].value.shape(), (Shape{4, 3, 1, 7}));
    EXPECT_EQ(imported.parameters()[3].value.shape(), (Shape{4, 5, 3, 1}));
    // Written again (kernel_shape, strides and pads per axis from the layer): the same network a third time.
    Model third = testing::expect_onnx_round_trip(imported, ctx, "rect_again", {3, 9, 11}, 3);
    EXPECT_EQ(testing::host_values(third.flat_parameters()),
              testing::host_values(imported.flat_parameters()));
  }
}

}  // namespace
}  // namespace engine::layers
