// The benchmarks' cost model (benchmarks/common/layer_costs.h) of a model read from ONNX: walking the
// imported Graph counts the same convolution and Linear FLOPs, and the same parameters, as the zoo model it
// was exported from (resnet18: 1x1 and 3x3 convolutions, strides 1 and 2, residual sums). train_bench's
// share-of-peak column for the torchvision zoo (benchmarks/cpu_peer.sh) rests on it. Skips without ONNX.

#include "benchmarks/common/layer_costs.h"

#include <string>

#include <gtest/gtest.h>

#include "layers/models.h"
#include "layers/onnx/onnx_model.h"
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
  if (!layers::onnx::onnx_available())
    GTEST_SKIP() << "this build has no ONNX support (no libonnx-dev at configure)";
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

}  // namespace
}  // namespace engine::bench
