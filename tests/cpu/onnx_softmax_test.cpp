// ONNX's Softmax as a classifier has it, on hand-made files: x [N, 5] -> MatMul to 7 classes -> Softmax. The
// node imports as one Softmax layer (axis -1 by default at opset 13+, 1 before, or written) whose output is
// softmax(x W) computed by hand in float64; exported (Softmax, axis 1) and imported again it is the same
// network, forward and backward. Another axis, another rank or an unknown attribute is refused naming the
// node. PyTorch's own export of nn.Linear then nn.Softmax(dim=1) (tests/python/softmax_torch.py) gives
// PyTorch's float64 output and weight gradients. Skips in builds without libonnx-dev (and the PyTorch case
// without PyTorch).

#include <cmath>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "layers/graph.h"
#include "layers/onnx/onnx_model.h"
#include "layers/softmax.h"
#include "tests/common/environment.h"
#include "tests/common/onnx_protos.h"
#include "tests/common/pytorch_tools.h"
#include "tests/common/same_network.h"
#include "tests/common/scratch_dirs.h"
#include "tests/cpu/layer_test_util.h"

namespace engine::layers {
namespace {

#if ENGINE_HAVE_ONNX
namespace pb = ::onnx;
using engine::testing::add_int_attribute;
using engine::testing::add_node;
using engine::testing::import_proto;
using engine::testing::import_proto_error;

// x [N, 5] -> MatMul fc [5, 7] -> "l" -> softmax(l) written by `head` -> "y".
pb::ModelProto classifier(int opset, const std::function<void(pb::GraphProto&)>& head) {
  pb::ModelProto m;
  pb::GraphProto& g = engine::testing::start_model(m, opset, {5});
  engine::testing::add_float_initializer(g, "fc.weight", {5, 7},
                                         [](int i) { return -1.0F + 0.125F * static_cast<float>(i % 13); });
  add_node(g, "MatMul", "/fc/MatMul", {"x", "fc.weight"}, "l");
  head(g);
  g.add_output()->set_name("y");
  return m;
}

pb::ModelProto softmax_model(int opset, bool write_axis, std::int64_t axis = 1) {
  return classifier(opset, [=](pb::GraphProto& g) {
    pb::NodeProto& n = add_node(g, "Softmax", "/softmax/Softmax", {"l"}, "y");
    if (write_axis) add_int_attribute(n, "axis", axis);
  });
}

int softmax_layers(const Model& m) {
  int count = 0;
  if (const auto* g = dynamic_cast<const Graph*>(&m.root())) {
    for (const Graph::NodeView& n : g->nodes()) count += dynamic_cast<const Softmax*>(n.layer) != nullptr;
  }
  return count;
}

// softmax(x W) per row, by hand in double (no max subtracted: the values here are small).
std::vector<double> probabilities_by_hand(const Model& m, const std::vector<double>& x, int n) {
  const std::vector<double> w = testing::host_values(m.parameters()[0].value);  // Linear's [out 7, in 5]
  std::vector<double> y(static_cast<std::size_t>(n) * 7);
  for (int r = 0; r < n; ++r) {
    double s = 0.0;
    for (int o = 0; o < 7; ++o) {
      double l = 0.0;
      for (int i = 0; i < 5; ++i) l += w[o * 5 + i] * x[r * 5 + i];
      y[r * 7 + o] = std::exp(l);
      s += y[r * 7 + o];
    }
    for (int o = 0; o < 7; ++o) y[r * 7 + o] /= s;
  }
  return y;
}

struct Case {
  std::string what;
  pb::ModelProto model;
};

std::vector<Case> cases() {
  return {{"opset 17, axis by default (-1)", softmax_model(17, false)},
          {"opset 13, axis 1", softmax_model(13, true, 1)},
          {"opset 13, axis -1", softmax_model(13, true, -1)},
          {"opset 11, axis by default (1)", softmax_model(11, false)}};
}
#endif

class OnnxSoftmax : public engine::testing::OnnxTest {};

#if ENGINE_HAVE_ONNX
TEST_F(OnnxSoftmax, ImportsAsOneSoftmaxLayerGivingTheProbabilitiesByHand) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.what);
    Model m = import_proto(c.model);
    m.finalize(testing::cpu_context(DType::F64), 5);
    EXPECT_EQ(softmax_layers(m), 1);
    const Tensor x = testing::random_tensor({3, 5}, DType::F64, 31, -2.0, 2.0);
    const std::vector<double> got = testing::host_values(m.forward(x, Mode::Eval));
    const std::vector<double> want = probabilities_by_hand(m, testing::host_values(x), 3);
    ASSERT_EQ(got.size(), want.size());
    // Double arithmetic in both, summed in different orders: a few ulp of values below 1.
    for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-14) << "value " << i;
  }
}

TEST_F(OnnxSoftmax, ExportedAsSoftmaxAndImportedAgainIsTheSameNetwork) {
  const ExecutionContext ctx = testing::cpu_context(DType::F64);
  Model net = import_proto(softmax_model(17, false));
  net.finalize(ctx, 5);
  const std::string path = (engine::testing::scratch_dir("onnx_softmax_", "net") / "net.onnx").string();
  onnx::export_model(net, path);
  pb::ModelProto written;
  {
    std::ifstream in(path, std::ios::binary);
    std::stringstream bytes;
    bytes << in.rdbuf();
    ASSERT_TRUE(written.ParseFromString(bytes.str()));
  }
  int softmax_nodes = 0;
  for (const pb::NodeProto& n : written.graph().node()) {
    if (n.op_type() != "Softmax") continue;
    ++softmax_nodes;
    ASSERT_EQ(n.attribute_size(), 1);
    EXPECT_EQ(n.attribute(0).name(), "axis");
    EXPECT_EQ(n.attribute(0).i(), 1);
  }
  EXPECT_EQ(softmax_nodes, 1);
  Model again = onnx::import_model(path);
  again.finalize(ctx, 99);
  EXPECT_EQ(softmax_layers(again), 1);
  engine::testing::expect_same_network(net, again, testing::random_tensor({4, 5}, DType::F64, 17, -2.0, 2.0),
                                       testing::random_tensor({4, 7}, DType::F64, 23));
  const std::vector<double> g = testing::host_values(net.flat_gradients());
  double norm = 0.0;
  for (const double v : g) norm += std::fabs(v);
  EXPECT_GT(norm, 0.0) << "the gradient passed through the softmax";
}

TEST_F(OnnxSoftmax, AnotherAxisRankOrAttributeIsRefusedByName) {
  const std::string axis0 = import_proto_error(softmax_model(17, true, 0));
  EXPECT_NE(axis0.find("node '/softmax/Softmax' (Softmax): attribute axis = 0 is not supported"),
            std::string::npos)
      << axis0;
  const std::string axis2 = import_proto_error(softmax_model(17, true, -2));
  EXPECT_NE(axis2.find("attribute axis = -2 is not supported"), std::string::npos) << axis2;
  const std::string rank4 = import_proto_error([] {
    pb::ModelProto m;
    pb::GraphProto& g = engine::testing::start_model(m, 17, {3, 4, 4});
    add_node(g, "Softmax", "/sm", {"x"}, "y");
    g.add_output()->set_name("y");
    return m;
  }());
  EXPECT_NE(
      rank4.find("node '/sm' (Softmax): input 'x' [1, 3, 4, 4] is not supported: only 2-d [N, classes]"),
      std::string::npos)
      << rank4;
  const std::string attr = import_proto_error(classifier(17, [](pb::GraphProto& g) {
    pb::NodeProto& n = add_node(g, "Softmax", "/sm", {"l"}, "y");
    add_int_attribute(n, "stash_type", 1);
  }));
  EXPECT_NE(attr.find("node '/sm' (Softmax): attribute 'stash_type' is not supported"), std::string::npos)
      << attr;
}
TEST_F(OnnxSoftmax, PyTorchsExportGivesPyTorchsOutputAndGradients) {
  SKIP_WITHOUT_PYTHON_MODULES("torch", "onnx");
  const auto dir = engine::testing::scratch_dir("onnx_softmax_", "torch");
  const std::string ran = engine::testing::command_output(
      engine::testing::pytorch_python() + " " + engine::testing::repo_root().string() +
      "/tests/python/softmax_torch.py " + dir.string() + " 2>&1 && echo done");
  ASSERT_NE(ran.find("done"), std::string::npos) << ran;
  std::ifstream in(dir / "expected.json");
  const nlohmann::json want = nlohmann::json::parse(in);
  Model m = onnx::import_model((dir / "model.onnx").string());
  m.finalize(testing::cpu_context(DType::F64), 5);
  EXPECT_EQ(softmax_layers(m), 1);
  const auto values = [&](const char* key) { return want[key].get<std::vector<double>>(); };
  const Tensor x = testing::host_tensor(values("x"), {3, 5}, DType::F64);
  const std::vector<double> y = testing::host_values(m.forward(x, Mode::Train));
  m.backward(testing::host_tensor(values("dy"), {3, 7}, DType::F64));
  std::vector<double> grads = values("dweight");  // the Linear's [7, 5], then its bias
  for (const double v : values("dbias")) grads.push_back(v);
  std::vector<double> ours;
  for (const auto& p : m.parameters()) {
    for (const double v : testing::host_values(p.grad)) ours.push_back(v);
  }
  // Both in float64 on the same (float32) weights and inputs, in other orders: a 5-term dot product, the
  // exponentials, a 7-term sum, the division; backward a 7-term sum and 3-term sums over the batch: a few
  // dozen roundings of 2^-53, bounded by 64 * 2^-53 of each value's scale (at least 1).
  const auto close = [](double a, double b) {
    return std::fabs(a - b) <= 64 * 0x1p-53 * std::max(1.0, std::fabs(b));
  };
  ASSERT_EQ(y.size(), want["y"].size());
  for (std::size_t i = 0; i < y.size(); ++i)
    EXPECT_PRED2(close, y[i], want["y"][i].get<double>()) << "y " << i;
  ASSERT_EQ(ours.size(), grads.size());
  for (std::size_t i = 0; i < ours.size(); ++i) EXPECT_PRED2(close, ours[i], grads[i]) << "gradient " << i;
}
#endif

}  // namespace
}  // namespace engine::layers
