// The Conv2d layer with groups and dilation (PyTorch's nn.Conv2d(..., dilation, groups)): its weight
// [out, in / groups, k, k] and fan-in, its options refused by name, a whole-model gradient check of a net
// with a grouped + dilated and a depthwise convolution, and ONNX out and back in (Conv's group and
// dilations).

#include <string>

#include <gtest/gtest.h>

#include "tests/common/onnx_skip.h"
#include "tests/cpu/layer_model_checks.h"

namespace engine::layers {
namespace {

std::unique_ptr<Sequential> grouped_net() {
  auto net = std::make_unique<Sequential>();
  net->emplace_named<Conv2d>(
      "conv1",
      Conv2dOptions{
          .in_channels = 4, .out_channels = 6, .kernel_size = 3, .padding = 2, .groups = 2, .dilation = 2});
  net->emplace_named<Conv2d>(
      "depthwise",
      Conv2dOptions{
          .in_channels = 6, .out_channels = 6, .kernel_size = 3, .stride = 2, .bias = false, .groups = 6});
  net->emplace_named<Flatten>("flatten");
  net->emplace_named<Linear>("fc", 6 * 3 * 4, 3);
  return net;
}

std::string error_of(const auto& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Conv2dGroupedLayer, WeightShapeOutputShapeAndRefusals) {
  Model m("grouped", grouped_net(), {4, 7, 9});
  m.finalize(testing::cpu_context(DType::F32), 1);
  EXPECT_EQ(m.parameters()[0].value.shape(), (Shape{6, 2, 3, 3}));  // conv1.weight: in / groups = 2
  EXPECT_EQ(m.parameters()[2].value.shape(), (Shape{6, 1, 3, 3}));  // depthwise.weight
  // conv1: 7x9, padding 2, dilation 2 (span 5) -> 7x9; depthwise 3x3 stride 2 -> 3x4.
  EXPECT_EQ(m.forward(testing::random_tensor({2, 4, 7, 9}, DType::F32, 1), Mode::Inference).shape(),
            (Shape{2, 3}));
  EXPECT_NE(error_of([] {
              Conv2d(Conv2dOptions{.in_channels = 4, .out_channels = 6, .kernel_size = 3, .groups = 4});
            }).find("groups 4 (groups must divide both channel counts)"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              Conv2d(Conv2dOptions{.in_channels = 4, .out_channels = 4, .kernel_size = 3, .dilation = 0});
            }).find("dilation 0"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              Conv2d(Conv2dOptions{
                  .in_channels = 4, .out_channels = 4, .kernel_size = 3, .identity_init = true, .groups = 2});
            }).find("identity_init is for dense convolutions"),
            std::string::npos);
  Conv2d dilated(Conv2dOptions{.in_channels = 1, .out_channels = 1, .kernel_size = 3, .dilation = 3});
  EXPECT_NE(error_of([&] {
              dilated.output_shape({1, 1, 6, 9});
            }).find("(dilation 3) with padding 0 does not fit"),
            std::string::npos);
  EXPECT_EQ(dilated.output_shape({1, 1, 7, 9}), (Shape{1, 1, 1, 3}));
}

TEST(Conv2dGroupedLayer, ModelGradientCheck) {
  Model m("grouped", grouped_net(), {4, 7, 9});
  m.finalize(testing::cpu_context(DType::F64), 3);
  testing::expect_model_gradients(m, {4, 7, 9}, 3, 100);
}

TEST(Conv2dGroupedLayer, OnnxOutAndBackInIsTheSameNetwork) {
  SKIP_WITHOUT_ONNX();
  const ExecutionContext ctx = testing::cpu_context(DType::F64);
  Model net("grouped", grouped_net(), {4, 7, 9});
  net.finalize(ctx, 5);
  testing::expect_onnx_round_trip(net, ctx, "grouped", {4, 7, 9}, 3);
}

}  // namespace
}  // namespace engine::layers
