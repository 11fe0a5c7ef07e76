// ONNX's Add and Mul by a broadcasting constant, on hand-made files: x * scale + shift per channel is one
// ChannelAffine whose parameters keep the file's names, shapes and values, and a scalar added is a fixed
// buffer; written back by the exporter and read again it is the same network (logits and gradients equal in
// float64); constants that do not broadcast per channel or as a scalar by numpy's rule are refused naming the
// node, the inputs and their shapes. PyTorch's own export trains like PyTorch in onnx_pytorch_test.cpp.
// Skips in builds without libonnx-dev.

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "layers/onnx/onnx_model.h"
#include "tests/common/onnx_protos.h"
#include "tests/common/same_network.h"
#include "tests/common/scratch_dirs.h"
#include "tests/cpu/layer_test_util.h"

namespace engine::layers {
namespace {

#if ENGINE_HAVE_ONNX
namespace pb = ::onnx;

// Values from `first` in steps of 1/8, exact in float (the test compares them with ==).
void add_tensor(pb::GraphProto& g, const std::string& name, const std::vector<std::int64_t>& dims,
                float first) {
  engine::testing::add_float_initializer(
      g, name, dims, [first](int i) { return first + 0.125F * static_cast<float>(i % 5); });
}

using engine::testing::add_node;
using engine::testing::import_proto;
using engine::testing::import_proto_error;

// x [N, 3, 5, 5] -> conv 1x1 (4 filters) -> * affine.scale [4, 1, 1] + affine.shift [1, 4, 1, 1] -> + one [1]
// -> global average pool -> flatten -> gemm to 3 classes. `scale_shape` replaces the scale's shape.
pb::ModelProto affine_model(const std::vector<std::int64_t>& scale_shape = {4, 1, 1}) {
  pb::ModelProto m;
  pb::GraphProto& g = engine::testing::start_model(m, 17, {3, 5, 5});
  add_tensor(g, "conv.weight", {4, 3, 1, 1}, -0.25F);
  add_tensor(g, "affine.scale", scale_shape, 0.5F);
  add_tensor(g, "affine.shift", {1, 4, 1, 1}, -0.125F);
  add_tensor(g, "one", {1}, 1.0F);
  add_tensor(g, "fc.weight", {4, 3}, -0.5F);  // MatMul: [in, out]
  add_node(g, "Conv", "/conv/Conv", {"x", "conv.weight"}, "c");
  add_node(g, "Mul", "/affine/Mul", {"c", "affine.scale"}, "m");
  add_node(g, "Add", "/affine/Add", {"affine.shift", "m"}, "a");  // the constant first: Add commutes
  add_node(g, "Add", "/Add", {"a", "one"}, "p1");
  add_node(g, "GlobalAveragePool", "/pool", {"p1"}, "p");
  add_node(g, "Flatten", "/flatten", {"p"}, "f");
  add_node(g, "MatMul", "/fc/MatMul", {"f", "fc.weight"}, "y");
  g.add_output()->set_name("y");
  return m;
}

#endif

class OnnxChannelAffine : public engine::testing::OnnxTest {};

#if ENGINE_HAVE_ONNX
TEST_F(OnnxChannelAffine, ScaleAndShiftPerChannelAreOneLayerWithTheFilesNamesAndValues) {
  Model m = import_proto(affine_model());
  m.finalize(testing::cpu_context(DType::F64), 5);
  std::vector<std::string> names;
  for (const Parameter& p : m.parameters()) names.push_back(p.name);
  EXPECT_EQ(names, (std::vector<std::string>{"conv.weight", "affine.scale", "affine.shift", "fc.weight"}));
  EXPECT_EQ(m.parameters()[1].value.shape(), (Shape{4, 1, 1}));
  EXPECT_EQ(m.parameters()[2].value.shape(), (Shape{1, 4, 1, 1}));
  EXPECT_EQ(testing::host_values(m.parameters()[1].value), (std::vector<double>{0.5, 0.625, 0.75, 0.875}));
  EXPECT_EQ(testing::host_values(m.parameters()[2].value), (std::vector<double>{-0.125, 0, 0.125, 0.25}));
  ASSERT_EQ(m.buffers().size(), 1u) << "the scalar added is a fixed buffer";
  EXPECT_EQ(testing::host_values(m.buffers()[0].value), (std::vector<double>{1.0}));

  // The logits by hand for one input: conv 1x1, * scale + shift, + 1, the mean over the plane, MatMul.
  const Tensor x = testing::random_tensor({1, 3, 5, 5}, DType::F64, 31);
  const std::vector<double> xv = testing::host_values(x);
  const std::vector<double> w = testing::host_values(m.parameters()[0].value);
  const std::vector<double> fc = testing::host_values(m.parameters()[3].value);  // [out 3, in 4]
  std::vector<double> pooled(4, 0.0);
  for (int c = 0; c < 4; ++c) {
    for (int i = 0; i < 25; ++i) {
      double conv = 0.0;
      for (int k = 0; k < 3; ++k) conv += w[c * 3 + k] * xv[k * 25 + i];
      pooled[c] += (conv * (0.5 + 0.125 * c) + (-0.125 + 0.125 * c) + 1.0) / 25.0;
    }
  }
  const std::vector<double> logits = testing::host_values(m.forward(x, Mode::Eval));
  for (int o = 0; o < 3; ++o) {
    double want = 0.0;
    for (int c = 0; c < 4; ++c) want += fc[o * 4 + c] * pooled[c];
    EXPECT_NEAR(logits[o], want, 1e-12) << "logit " << o;
  }
}

TEST_F(OnnxChannelAffine, ExportedAndImportedAgainIsTheSameNetwork) {
  const ExecutionContext ctx = testing::cpu_context(DType::F64);
  Model net = import_proto(affine_model());
  net.finalize(ctx, 5);
  const std::string path = (engine::testing::scratch_dir("onnx_affine_", "net") / "net.onnx").string();
  onnx::export_model(net, path);
  Model again = onnx::import_model(path);
  again.finalize(ctx, 99);  // another seed: every value must come from the file
  ASSERT_EQ(again.parameters().size(), net.parameters().size());
  for (std::size_t i = 0; i < net.parameters().size(); ++i)
    EXPECT_EQ(again.parameters()[i].name, net.parameters()[i].name);
  engine::testing::expect_same_network(net, again, testing::random_tensor({2, 3, 5, 5}, DType::F64, 17),
                                       testing::random_tensor({2, 3}, DType::F64, 23));
}

TEST_F(OnnxChannelAffine, ConstantsThatDoNotBroadcastPerChannelAreRefusedByName) {
  // numpy aligns the last axes: [4] meets W (5) of [N, 4, 5, 5], not the 4 channels.
  const std::string per_w = import_proto_error(affine_model({4}));
  EXPECT_NE(
      per_w.find("node '/affine/Mul' (Mul): input 1 'affine.scale' [4] against input 0 'c' [1, 4, 5, 5]"),
      std::string::npos)
      << per_w;
  EXPECT_NE(per_w.find("one value per column W"), std::string::npos) << per_w;
  const std::string plane = import_proto_error(affine_model({4, 5, 1}));
  EXPECT_NE(plane.find("'affine.scale' [4, 5, 1] against input 0 'c' [1, 4, 5, 5]"), std::string::npos)
      << plane;
  const std::string wider = import_proto_error(affine_model({1, 1, 4, 1, 1}));
  EXPECT_NE(wider.find("'affine.scale' [1, 1, 4, 1, 1]"), std::string::npos) << wider;
  // c * c, two run-time values, is the Graph's broadcasting Mul (layers/graph_ops.h;
  // tests/cpu/graph_ops_test.cpp).
  pb::ModelProto two = affine_model();
  two.mutable_graph()->mutable_node(1)->set_input(1, "c");
  EXPECT_EQ(import_proto_error(two), "(no error)");
}
#endif

}  // namespace
}  // namespace engine::layers
