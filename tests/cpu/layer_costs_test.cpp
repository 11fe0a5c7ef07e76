// The benchmarks' cost model (benchmarks/common/layer_costs.h) of a model read from ONNX: walking the
// imported Graph counts the same convolution and Linear FLOPs, and the same parameters, as the zoo model it
// was exported from (resnet18: 1x1 and 3x3 convolutions, strides 1 and 2, residual sums). train_bench's
// share-of-peak column for the torchvision zoo (benchmarks/cpu_peer.sh) rests on it. Skips without ONNX.

#include "benchmarks/common/layer_costs.h"

#include <memory>
#include <string>
#include <utility>

#include <gtest/gtest.h>

#include "layers/channel_linear.h"
#include "layers/conv2d.h"
#include "layers/models.h"
#include "layers/onnx/onnx_model.h"
#include "layers/sequential.h"
#include "tests/common/onnx_skip.h"
#include "tests/common/scratch_dirs.h"
#include "tests/cpu/layer_test_util.h"

namespace engine::bench {
namespace {

double flops_of(const ModelCost& cost, const std::string& kind, bool forward) {
  double sum = 0;
  for (const LayerCost& c : cost.layers) {
    if (c.kind == kind) sum += forward ? c.forward_flops : c.backward_flops;
  }
  return sum;
}

TEST(LayerCosts, AnImportedGraphCostsWhatItsZooModelCosts) {
  SKIP_WITHOUT_ONNX();
  layers::Model native = layers::build_model("resnet18", 3, 10, 32, 32);
  native.finalize(layers::testing::cpu_context(DType::F32, 1), 7);  // the exporter writes a finalized model
  const std::string path = (engine::testing::scratch_dir("layer_costs_", "net") / "resnet18.onnx").string();
  layers::onnx::export_model(native, path);
  const layers::Model imported = layers::build_model(path, 3, 10, 32, 32);

  const ModelCost a = model_cost(native, 8), b = model_cost(imported, 8);
  EXPECT_EQ(b.parameters, a.parameters);
  for (const char* kind : {"Conv2d", "Linear", "BatchNorm2d"}) {
    EXPECT_GT(flops_of(a, kind, true), 0) << kind;
    EXPECT_EQ(flops_of(b, kind, true), flops_of(a, kind, true)) << kind << " forward";
    EXPECT_EQ(flops_of(b, kind, false), flops_of(a, kind, false)) << kind << " backward";
  }
  // The residual joins: a ResidualAdd per block natively, a Sum node per block in the graph, equal in count.
  int adds = 0, sums = 0;
  for (const LayerCost& c : a.layers) adds += c.kind == "ResidualAdd" ? 1 : 0;
  for (const LayerCost& c : b.layers) sums += c.kind == "Sum" ? 1 : 0;
  EXPECT_EQ(adds, 8);
  EXPECT_EQ(sums, adds);
}

// convnext's per-pixel Linear counts as the 1x1 convolution it runs as.
TEST(LayerCosts, AChannelLinearCostsItsOneByOneConvolution) {
  auto as_linear = std::make_unique<layers::Sequential>();
  as_linear->emplace_named<layers::ChannelLinear>("pw", 8, 16, true);
  auto as_conv = std::make_unique<layers::Sequential>();
  as_conv->emplace_named<layers::Conv2d>(
      "pw", layers::Conv2dOptions{.in_channels = 8, .out_channels = 16, .kernel_size = 1, .bias = true});
  const layers::Model a("linear", std::move(as_linear), {8, 5, 7}), b("conv", std::move(as_conv), {8, 5, 7});
  const ModelCost ca = model_cost(a, 3), cb = model_cost(b, 3);
  ASSERT_EQ(ca.layers.size(), 1u);
  EXPECT_EQ(ca.layers[0].forward_flops, cb.layers[0].forward_flops);
  EXPECT_EQ(ca.layers[0].backward_flops, cb.layers[0].backward_flops);
  EXPECT_EQ(ca.layers[0].forward_flops, 2.0 * 3 * 16 * 5 * 7 * 8 + 3 * 16 * 5 * 7);
}

}  // namespace
}  // namespace engine::bench
