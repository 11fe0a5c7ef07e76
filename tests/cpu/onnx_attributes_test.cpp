// Float attributes of imported ONNX nodes read as the decimal they were written from
// (layers/onnx/onnx_attrs.h's float_as_written): ONNX stores them as float32, and BatchNormalization's
// momentum and epsilon are doubles in the engine and in PyTorch. MNASNet's momentum 3e-4 arrives as
// float32(0.9997); its complement in double, 2.9999018e-4, moved every running statistic of torchvision's
// mnasnet1_0 by 3.3e-5 of itself after one step (docs/ZOO.md), 100 times PyTorch float32's own distance.
// Skips in builds without libonnx-dev.

#if ENGINE_HAVE_ONNX
#include "layers/onnx/onnx_attrs.h"
#endif

#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "layers/batchnorm2d.h"
#include "layers/onnx/onnx_model.h"
#include "tests/common/onnx_protos.h"
#include "tests/cpu/layer_test_util.h"

namespace engine::layers {
namespace {

#if ENGINE_HAVE_ONNX
namespace pb = ::onnx;

// x [N, 3, 2, 2] -> BatchNormalization (the given float32 momentum and epsilon, as PyTorch's exporter writes
// them) -> global average pool -> flatten -> gemm to 10 classes.
std::string batchnorm_model(float momentum, float epsilon) {
  pb::ModelProto m;
  pb::GraphProto& g = engine::testing::start_model(m, 17, {3, 2, 2});
  engine::testing::add_float_initializer(g, "bn.weight", {3}, [](int) { return 1.0F; });
  engine::testing::add_float_initializer(g, "bn.bias", {3}, [](int) { return 0.0F; });
  engine::testing::add_float_initializer(g, "bn.running_mean", {3}, [](int) { return 0.0F; });
  engine::testing::add_float_initializer(g, "bn.running_var", {3}, [](int) { return 1.0F; });
  engine::testing::add_float_initializer(g, "fc.weight", {10, 3}, [](int i) { return 0.01F * float(i % 5); });
  engine::testing::add_float_initializer(g, "fc.bias", {10}, [](int) { return 0.0F; });
  pb::NodeProto& bn =
      engine::testing::add_node(g, "BatchNormalization", "/bn",
                                {"x", "bn.weight", "bn.bias", "bn.running_mean", "bn.running_var"}, "b");
  engine::testing::add_float_attribute(bn, "momentum", momentum);
  engine::testing::add_float_attribute(bn, "epsilon", epsilon);
  engine::testing::add_node(g, "GlobalAveragePool", "/pool", {"b"}, "p");
  engine::testing::add_node(g, "Flatten", "/flatten", {"p"}, "f");
  pb::NodeProto& fc = engine::testing::add_node(g, "Gemm", "/fc/Gemm", {"f", "fc.weight", "fc.bias"}, "y");
  engine::testing::add_int_attribute(fc, "transB", 1);
  g.add_output()->set_name("y");
  return m.SerializeAsString();
}

struct BatchNormArgs {
  double eps = 0, momentum = 0;
};

BatchNormArgs imported_batchnorm_args(float momentum, float epsilon) {
  BatchNormArgs got;
  onnx::ImportOptions o;
  o.make_batchnorm = [&](int c, double eps, double m) {
    got = {eps, m};
    return std::make_unique<BatchNorm2d>(c, eps, m);
  };
  onnx::import_model_bytes(batchnorm_model(momentum, epsilon), "bn.onnx", o);
  return got;
}

TEST(OnnxAttributes, BatchNormMomentumAndEpsilonAreTheDecimalsPyTorchWrote) {
  SKIP_WITHOUT_ONNX();
  // What PyTorch holds, in double: MNASNet's momentum 1 - 0.9997 exactly (its _BN_MOMENTUM), the default 0.1
  // within 2e-17 (1 - 0.9: the file holds ONNX's complement), eps 1e-5 and 1e-3 exactly.
  const BatchNormArgs mnasnet = imported_batchnorm_args(0.9997F, 1e-5F);
  EXPECT_EQ(mnasnet.momentum, 1.0 - 0.9997);
  EXPECT_EQ(mnasnet.eps, 1e-5);
  const BatchNormArgs resnet = imported_batchnorm_args(0.9F, 1e-3F);
  EXPECT_EQ(resnet.momentum, 1.0 - 0.9);
  EXPECT_EQ(resnet.eps, 1e-3);
}

TEST(OnnxAttributes, AFloatWithoutAShorterDecimalKeepsItsValue) {
  SKIP_WITHOUT_ONNX();
  // Any float32 reads back as a double that rounds to it, within half its ulp (normal numbers): the decimal
  // is the shortest that does.
  for (const float f : {0.123456789F, 1.0F / 3.0F, std::nextafter(0.9997F, 1.0F), 1.5e-38F, 3.4e38F, -2.5F}) {
    const double d = onnx::detail::float_as_written(f);
    EXPECT_EQ(static_cast<float>(d), f) << f;
    EXPECT_LE(std::abs(d - static_cast<double>(f)), std::abs(static_cast<double>(f)) * 0x1p-24) << f;
  }
}

TEST(OnnxAttributes, MnasnetsRunningMeanMovesByPyTorchsMomentum) {
  SKIP_WITHOUT_ONNX();
  // One training-mode forward from running_mean 0: running_mean = momentum * the batch mean, in float64.
  onnx::ImportOptions o;
  o.num_classes = 10;
  Model m = onnx::import_model_bytes(batchnorm_model(0.9997F, 1e-5F), "bn.onnx", o);
  m.finalize(testing::cpu_context(DType::F64), 1);
  const Tensor x = testing::random_tensor({4, 3, 2, 2}, DType::F64, 7, -2.0, 2.0);
  m.forward(x, Mode::Train);
  const std::vector<double> xs = testing::host_values(x);
  std::vector<double> mean(3, 0.0), mean_abs(3, 0.0);
  for (std::size_t i = 0; i < xs.size(); ++i) {
    mean[(i / 4) % 3] += xs[i] / 16.0;
    mean_abs[(i / 4) % 3] += std::abs(xs[i]) / 16.0;
  }
  const Buffer* running_mean = nullptr;
  for (const Buffer& b : m.buffers()) {
    if (b.name == "bn.running_mean") running_mean = &b;
  }
  ASSERT_NE(running_mean, nullptr);
  const std::vector<double> got = testing::host_values(running_mean->value);
  for (int c = 0; c < 3; ++c) {
    // float64 sums of 16 values, in any order: within 16 ulps of the sum of magnitudes, and 2 more roundings
    // (1 - float32(0.9997) instead is 3.3e-5 of the mean off).
    EXPECT_NEAR(got[c], (1.0 - 0.9997) * mean[c], (1.0 - 0.9997) * mean_abs[c] * 18 * 0x1p-53) << c;
  }
}
#endif

}  // namespace
}  // namespace engine::layers
