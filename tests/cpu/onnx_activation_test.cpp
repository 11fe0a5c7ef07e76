// ONNX's pointwise activations on hand-made files: Sigmoid, Tanh, HardSigmoid (alpha, beta), HardSwish, Clip
// (min and max as attributes before opset 11, as constant inputs since, either side open), LeakyRelu, and
// Sigmoid then Mul by its own input, which is one SiLU layer. Each imports as one Activation layer with the
// file's parameters and computes the reference's logits (float64); written back by the exporter (SiLU as
// Sigmoid then Mul again) and read again it is the same network, forward and backward. What the engine
// cannot take is refused naming the node. Skips in builds without libonnx-dev.

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/cpu/activation.h"
#include "layers/activation.h"
#include "layers/graph.h"
#include "layers/onnx/onnx_model.h"
#include "tests/common/onnx_protos.h"
#include "tests/common/same_network.h"
#include "tests/common/scratch_dirs.h"
#include "tests/cpu/layer_test_util.h"

namespace engine::layers {
namespace {

#if ENGINE_HAVE_ONNX
namespace pb = ::onnx;
using engine::testing::add_float_attribute;
using engine::testing::add_float_scalar;
using engine::testing::add_node;
using engine::testing::import_proto;
using engine::testing::import_proto_error;

// x [N, 3, 5, 5] -> conv 1x1 (4 filters) -> `act` (from "c" to "a") -> global average pool -> flatten ->
// MatMul to 3 classes.
pb::ModelProto act_model(int opset, const std::function<void(pb::GraphProto&)>& act) {
  pb::ModelProto m;
  pb::GraphProto& g = engine::testing::start_model(m, opset, {3, 5, 5});
  engine::testing::add_float_initializer(g, "conv.weight", {4, 3, 1, 1},
                                         [](int i) { return -1.5F + 0.375F * static_cast<float>(i % 9); });
  engine::testing::add_float_initializer(g, "fc.weight", {4, 3},
                                         [](int i) { return -0.5F + 0.125F * static_cast<float>(i % 5); });
  add_node(g, "Conv", "/conv/Conv", {"x", "conv.weight"}, "c");
  act(g);
  add_node(g, "GlobalAveragePool", "/pool", {"a"}, "p");
  add_node(g, "Flatten", "/flatten", {"p"}, "f");
  add_node(g, "MatMul", "/fc/MatMul", {"f", "fc.weight"}, "y");
  g.add_output()->set_name("y");
  return m;
}

// The activation layers of an imported model.
std::vector<const Activation*> activations(const Model& m) {
  std::vector<const Activation*> out;
  const auto* g = dynamic_cast<const Graph*>(&m.root());
  if (g == nullptr) return out;
  for (const Graph::NodeView& n : g->nodes()) {
    if (const auto* a = dynamic_cast<const Activation*>(n.layer)) out.push_back(a);
  }
  return out;
}

// The logits by hand for x [1, 3, 5, 5]: conv 1x1, the activation p, the mean over the plane, MatMul.
std::vector<double> logits_by_hand(const Model& m, const ActivationParams& p, const std::vector<double>& xv) {
  const std::vector<double> w = testing::host_values(m.parameters()[0].value);
  const std::vector<double> fc = testing::host_values(m.parameters()[1].value);  // [out 3, in 4]
  std::vector<double> pooled(4, 0.0), logits(3, 0.0);
  for (int c = 0; c < 4; ++c) {
    for (int i = 0; i < 25; ++i) {
      double conv = 0.0;
      for (int k = 0; k < 3; ++k) conv += w[c * 3 + k] * xv[k * 25 + i];
      pooled[c] += cpu::activation_value(p, conv) / 25.0;
    }
  }
  for (int o = 0; o < 3; ++o) {
    for (int c = 0; c < 4; ++c) logits[o] += fc[o * 4 + c] * pooled[c];
  }
  return logits;
}

struct Case {
  std::string what;
  int opset;
  std::function<void(pb::GraphProto&)> nodes;
  ActivationParams want;
};

std::vector<Case> cases() {
  constexpr float kInf = INFINITY;
  return {
      {"Sigmoid",
       17,
       [](pb::GraphProto& g) { add_node(g, "Sigmoid", "/s", {"c"}, "a"); },
       {ActivationKind::Sigmoid}},
      {"SiLU",
       17,
       [](pb::GraphProto& g) {
         add_node(g, "Sigmoid", "/act/Sigmoid", {"c"}, "s");
         add_node(g, "Mul", "/act/Mul", {"c", "s"}, "a");
       },
       {ActivationKind::SiLU}},
      {"Tanh", 17, [](pb::GraphProto& g) { add_node(g, "Tanh", "/t", {"c"}, "a"); }, {ActivationKind::Tanh}},
      {"HardSigmoid",
       17,
       [](pb::GraphProto& g) {
         pb::NodeProto& n = add_node(g, "HardSigmoid", "/h", {"c"}, "a");
         add_float_attribute(n, "alpha", 1.0F / 6.0F);
       },
       {ActivationKind::HardSigmoid, 1.0F / 6.0F, 0.5F}},
      {"HardSwish",
       17,
       [](pb::GraphProto& g) { add_node(g, "HardSwish", "/h", {"c"}, "a"); },
       {ActivationKind::HardSwish}},
      {"Clip opset 9",
       9,
       [](pb::GraphProto& g) {
         pb::NodeProto& n = add_node(g, "Clip", "/clip", {"c"}, "a");
         add_float_attribute(n, "min", 0.0F);
         add_float_attribute(n, "max", 6.0F);
       },
       {ActivationKind::Clip, 0.0F, 6.0F}},
      {"Clip opset 13 (ReLU6)",
       13,
       [](pb::GraphProto& g) {
         pb::NodeProto& k = add_node(g, "Constant", "/min", {}, "lo");
         add_float_attribute(k, "value_float", 0.0F);
         add_float_scalar(g, "hi", 6.0F);
         add_node(g, "Clip", "/clip", {"c", "lo", "hi"}, "a");
       },
       {ActivationKind::Clip, 0.0F, 6.0F}},
      {"Clip max only",
       13,
       [](pb::GraphProto& g) {
         add_float_scalar(g, "hi", 0.25F);
         add_node(g, "Clip", "/clip", {"c", "", "hi"}, "a");
       },
       {ActivationKind::Clip, -kInf, 0.25F}},
      {"LeakyRelu",
       17,
       [](pb::GraphProto& g) {
         pb::NodeProto& n = add_node(g, "LeakyRelu", "/l", {"c"}, "a");
         add_float_attribute(n, "alpha", 0.125F);
       },
       {ActivationKind::LeakyRelu, 0.125F, 0.0F}},
      {"LeakyRelu default",
       17,
       [](pb::GraphProto& g) { add_node(g, "LeakyRelu", "/l", {"c"}, "a"); },
       {ActivationKind::LeakyRelu, 0.01F, 0.0F}},
  };
}
#endif

class OnnxActivation : public engine::testing::OnnxTest {};

#if ENGINE_HAVE_ONNX
TEST_F(OnnxActivation, EachOpIsOneLayerWithTheFilesParametersAndTheReferencesLogits) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.what);
    Model m = import_proto(act_model(c.opset, c.nodes));
    m.finalize(testing::cpu_context(DType::F64), 5);
    const std::vector<const Activation*> acts = activations(m);
    ASSERT_EQ(acts.size(), 1u);
    EXPECT_EQ(acts[0]->params().kind, c.want.kind);
    EXPECT_EQ(acts[0]->params().alpha, c.want.alpha);
    EXPECT_EQ(acts[0]->params().beta, c.want.beta);
    const Tensor x = testing::random_tensor({1, 3, 5, 5}, DType::F64, 31, -3.0, 3.0);
    const std::vector<double> got = testing::host_values(m.forward(x, Mode::Eval));
    const std::vector<double> want = logits_by_hand(m, c.want, testing::host_values(x));
    for (int o = 0; o < 3; ++o) EXPECT_NEAR(got[o], want[o], 1e-12) << "logit " << o;
  }
}

TEST_F(OnnxActivation, ExportedAndImportedAgainIsTheSameNetwork) {
  const ExecutionContext ctx = testing::cpu_context(DType::F64);
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.what);
    Model net = import_proto(act_model(c.opset, c.nodes));
    net.finalize(ctx, 5);
    const std::string path = (engine::testing::scratch_dir("onnx_act_", "net") / "net.onnx").string();
    onnx::export_model(net, path);
    Model again = onnx::import_model(path);
    again.finalize(ctx, 99);
    const std::vector<const Activation*> acts = activations(again);
    ASSERT_EQ(acts.size(), 1u) << "SiLU written as Sigmoid then Mul is read back as one SiLU";
    EXPECT_EQ(acts[0]->params().kind, c.want.kind);
    EXPECT_EQ(acts[0]->params().alpha, c.want.alpha);
    EXPECT_EQ(acts[0]->params().beta, c.want.beta);
    engine::testing::expect_same_network(net, again,
                                         testing::random_tensor({2, 3, 5, 5}, DType::F64, 17, -3.0, 3.0),
                                         testing::random_tensor({2, 3}, DType::F64, 23));
  }
}

TEST_F(OnnxActivation, WhatTheEngineCannotTakeIsRefusedByName) {
  const std::string runtime_min = import_proto_error(act_model(13, [](pb::GraphProto& g) {
    add_node(g, "Clip", "/clip", {"c", "c"}, "a");
  }));
  EXPECT_NE(runtime_min.find("node '/clip' (Clip): its min 'c' is computed at run time"), std::string::npos)
      << runtime_min;
  const std::string inverted = import_proto_error(act_model(9, [](pb::GraphProto& g) {
    pb::NodeProto& n = add_node(g, "Clip", "/clip", {"c"}, "a");
    add_float_attribute(n, "min", 2.0F);
    add_float_attribute(n, "max", 1.0F);
  }));
  EXPECT_NE(inverted.find("node '/clip' (Clip): min 2 and max 1 are not supported"), std::string::npos)
      << inverted;
  const std::string attr = import_proto_error(act_model(17, [](pb::GraphProto& g) {
    pb::NodeProto& n = add_node(g, "HardSigmoid", "/h", {"c"}, "a");
    add_float_attribute(n, "gamma", 1.0F);
  }));
  EXPECT_NE(attr.find("node '/h' (HardSigmoid): attribute 'gamma' is not supported"), std::string::npos)
      << attr;
  const std::string vector_max = import_proto_error(act_model(13, [](pb::GraphProto& g) {
    engine::testing::add_float_initializer(g, "hi", {2}, [](int) { return 1.0F; });
    add_node(g, "Clip", "/clip", {"c", "", "hi"}, "a");
  }));
  EXPECT_NE(vector_max.find("its max 'hi' has 2 values; a scalar is expected"), std::string::npos)
      << vector_max;
}

TEST_F(OnnxActivation, SigmoidWhoseOutputHasAnotherReaderStaysASigmoid) {
  // s = Sigmoid(c) read by the Mul and by the pooling: not a SiLU (the Mul is then its own node).
  const pb::ModelProto m = act_model(17, [](pb::GraphProto& g) {
    add_node(g, "Sigmoid", "/s", {"c"}, "s");
    add_node(g, "Mul", "/m", {"c", "s"}, "cs");
    add_node(g, "Add", "/add", {"cs", "s"}, "a");
  });
  // The graph takes the Mul of two activations (a broadcasting binary op), so the model imports.
  ASSERT_EQ(import_proto_error(m), "(no error)");
  Model net = import_proto(m);
  net.finalize(testing::cpu_context(DType::F64), 5);
  const std::vector<const Activation*> acts = activations(net);
  ASSERT_EQ(acts.size(), 1u);
  EXPECT_EQ(acts[0]->params().kind, ActivationKind::Sigmoid);
}
#endif

}  // namespace
}  // namespace engine::layers
