// BatchNorm+ReLU fusion inside an imported graph (layers/fusion.h): a BatchNorm2d whose output only a ReLU
// reads is fused, as in a zoo model's Sequential; one whose output also feeds another node (a residual sum)
// is not, since that node must see the unrectified values. An imported zoo model fuses the pairs the zoo
// model fuses, and trains as the unfused import does (bitwise in float64, within float32 rounding in
// float32).

#include <cmath>
#include <memory>
#include <string>
#include <tuple>

#include <gtest/gtest.h>

#include "layers/batchnorm2d.h"
#include "layers/graph.h"
#include "layers/models.h"
#include "layers/onnx/onnx_model.h"
#include "layers/relu.h"
#include "tests/common/onnx_skip.h"
#include "tests/common/scratch_dirs.h"
#include "tests/cpu/fusion_test_util.h"
#include "tests/cpu/layer_test_util.h"

namespace engine {
namespace {

using layers::Mode;
using layers::Model;
using namespace fusion_testing;  // NOLINT(google-build-using-namespace): the shared helpers of the fusion
                                 // tests

// bn -> relu, and with `shared` also sum(bn, relu): the BatchNorm's output read by two nodes.
Model bn_relu_graph(bool shared) {
  auto g = std::make_unique<layers::Graph>();
  const int bn = g->add_node("bn", std::make_unique<layers::BatchNorm2d>(3), 0);
  const int relu = g->add_node("relu", std::make_unique<layers::ReLU>(), bn);
  g->set_output(shared ? g->add_sum("sum", bn, relu) : relu);
  Model m("graph", std::move(g), {3, 4, 5});
  m.finalize(layers::testing::cpu_context(), 1);
  return m;
}

TEST(OnnxGraphFusion, FusesABatchNormOnlyWhenItsOutputFeedsTheReluAlone) {
  EXPECT_EQ(bn_relu_graph(false).fused_batchnorm_relu(), 1);
  Model shared = bn_relu_graph(true);
  EXPECT_EQ(shared.fused_batchnorm_relu(), 0);
  // x + relu(x) of the normalized values: negative entries survive (a fused BatchNorm would zero them).
  const Tensor x = layers::testing::random_tensor({2, 3, 4, 5}, DType::F32, 5);
  bool negative = false;
  for (const double v : layers::testing::host_values(shared.forward(x, Mode::Train))) negative |= v < 0.0;
  EXPECT_TRUE(negative);
}

Model imported_zoo(const std::string& name, int side, bool fusion, DType dtype) {
  Model zoo = layers::build_model(name, 3, 10, side, side);
  zoo.set_fusion(false);
  zoo.finalize(layers::testing::cpu_context(), 11);
  const auto dir = engine::testing::scratch_dir("onnx_fusion_", name);
  const std::string path = (dir / "model.onnx").string();
  layers::onnx::export_model(zoo, path);
  Model m = layers::onnx::import_model(path);
  m.set_fusion(fusion);
  m.finalize(layers::testing::cpu_context(dtype, /*dropout_seed=*/9), 1);
  return m;
}

TEST(OnnxGraphFusion, AnImportedZooModelFusesItsPairsAndTrainsAsUnfused) {
  SKIP_WITHOUT_ONNX();
  // float64 runs the reference's plain composition fused or not: bitwise equal. resnet18 on 8x8 (for
  // time): the stem's and each block's bn1 -> relu; each block's bn2 feeds the residual sum, not a ReLU.
  const Tensor labels = layers::testing::random_labels(3, 10, 72);
  {
    Model fused = imported_zoo("resnet18", 8, true, DType::F64),
          plain = imported_zoo("resnet18", 8, false, DType::F64);
    EXPECT_EQ(fused.fused_batchnorm_relu(), 9);
    EXPECT_EQ(plain.fused_batchnorm_relu(), 0);
    const Tensor x = layers::testing::random_tensor({3, 3, 8, 8}, DType::F64, 71);
    for (const Mode mode : {Mode::Train, Mode::Eval}) {
      const StepResult a = step(fused, x, labels, mode), b = step(plain, x, labels, mode);
      EXPECT_EQ(a.loss, b.loss);
      EXPECT_EQ(a.logits, b.logits);
      EXPECT_EQ(a.grads, b.grads);
      EXPECT_EQ(a.buffers, b.buffers);
    }
  }
  // float32: the fused kernels (cnn3 also folds its conv biases into the BatchNorms).
  for (const auto& [name, side, pairs] : {std::tuple{"cnn3", 32, 3}, std::tuple{"resnet18", 8, 9}}) {
    Model fused = imported_zoo(name, side, true, DType::F32),
          plain = imported_zoo(name, side, false, DType::F32);
    EXPECT_EQ(fused.fused_batchnorm_relu(), pairs) << name;
    const Tensor x = layers::testing::random_tensor({3, 3, side, side}, DType::F32, 71);
    for (const Mode mode : {Mode::Train, Mode::Eval}) {
      const StepResult a = step(fused, x, labels, mode), b = step(plain, x, labels, mode);
      EXPECT_NEAR(a.loss, b.loss, 1e-5 * std::fabs(b.loss)) << name;
      expect_close_to(a.logits, b.logits, "logits", name);
      expect_close_to(a.grads, b.grads, "gradient", name);
      expect_close_to(a.buffers, b.buffers, "running statistics", name);
    }
  }
}

}  // namespace
}  // namespace engine
