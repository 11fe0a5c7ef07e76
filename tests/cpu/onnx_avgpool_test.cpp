// AvgPool2d through ONNX: a net with two average pools (square with the padding counted, PyTorch's default;
// rectangular without it, ONNX's default) written as AveragePool nodes and read back is the same network,
// logits and gradients equal in float64. The ONNX node tests (onnx_conformance_test.cpp) check the
// importer's reading of files written by others. Skips in builds without libonnx-dev.

#include <gtest/gtest.h>

#include "layers/avgpool2d.h"
#include "tests/common/onnx_skip.h"
#include "tests/cpu/layer_model_checks.h"
#include "tests/cpu/layer_test_util.h"

namespace engine::layers {
namespace {

std::unique_ptr<Sequential> avgpool_net() {
  auto net = std::make_unique<Sequential>();
  net->emplace_named<Conv2d>("conv", Conv2dOptions{.in_channels = 3, .out_channels = 4, .kernel_size = 3});
  net->emplace_named<AvgPool2d>("pool1", 3, 1, 1, true);
  net->emplace_named<AvgPool2d>("pool2", AvgPool2dOptions{.kernel_h = 3,
                                                          .kernel_w = 2,
                                                          .stride_h = 2,
                                                          .stride_w = 1,
                                                          .pad_h = 2,
                                                          .pad_w = 1,
                                                          .count_include_pad = false});
  net->emplace_named<Flatten>("flatten");
  net->emplace_named<Linear>("fc", 4 * 5 * 8, 10);
  return net;
}

TEST(OnnxAvgPool, ExportedAndImportedNetIsTheSameNetwork) {
  SKIP_WITHOUT_ONNX();
  const ExecutionContext ctx = testing::cpu_context(DType::F64);
  // [3, 9, 9] -> conv 3x3: [4, 7, 7] -> pool1 (3, stride 1, pad 1): [4, 7, 7] -> pool2: [4, 5, 8].
  Model net("avgpool_net", avgpool_net(), {3, 9, 9});
  net.finalize(ctx, 5);
  // Read back with another seed: every value must come from the file.
  testing::expect_onnx_round_trip(net, ctx, "avgpool", {3, 9, 9}, 10);
}

}  // namespace
}  // namespace engine::layers
