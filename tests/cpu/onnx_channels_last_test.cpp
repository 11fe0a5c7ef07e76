// convnext's channels-last regions on a hand-made file: a CNBlock's pointwise half as PyTorch writes it
// (Transpose perm [0, 2, 3, 1], LayerNormalization over the last axis, MatMul by Transpose(W, perm [1, 0])
// and Add, GELU's Erf form, MatMul by an [in, out] constant and Add, Transpose back), then a layer scale
// [C, 1, 1] and the residual Add. It imports as ChannelLayerNorm, ChannelLinear (the file's names,
// nn.Linear's [out, in]), GELU and ChannelAffine and computes, in float64, the logits written out by hand
// here; written back by the exporter and read again it is the same network, forward and backward. What a
// region cannot take is refused naming the node. Skips in builds without libonnx-dev.

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "layers/channel_layernorm.h"
#include "layers/channel_linear.h"
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
using engine::testing::add_float_initializer;
using engine::testing::add_float_scalar;
using engine::testing::add_int_attribute;
using engine::testing::add_ints_attribute;
using engine::testing::add_node;
using engine::testing::import_proto;
using engine::testing::import_proto_error;

float value_at(int i, float scale) { return scale * (-1.0F + 0.25F * static_cast<float>((i * 7) % 9)); }

// x [N, 3, 5, 5] -> conv 1x1 (4) -> c; the region from c to "b" (`region`, PyTorch's CNBlock by default);
// layer_scale * b + c -> global average pool -> flatten -> Gemm to 3 classes.
pb::ModelProto block_model(const std::function<void(pb::GraphProto&)>& region = nullptr) {
  pb::ModelProto m;
  pb::GraphProto& g = engine::testing::start_model(m, 17, {3, 5, 5});
  add_float_initializer(g, "stem.weight", {4, 3, 1, 1}, [](int i) { return value_at(i, 1.0F); });
  add_float_initializer(g, "norm.weight", {4}, [](int i) { return 0.5F + 0.25F * static_cast<float>(i); });
  add_float_initializer(g, "norm.bias", {4}, [](int i) { return value_at(i, 0.5F); });
  add_float_initializer(g, "fc1.weight", {6, 4}, [](int i) { return value_at(i, 0.5F); });
  add_float_initializer(g, "fc1.bias", {6}, [](int i) { return value_at(i + 3, 0.25F); });
  add_float_initializer(g, "fc2.weight", {6, 4}, [](int i) { return value_at(i + 1, 0.5F); });  // [in, out]
  add_float_initializer(g, "fc2.bias", {4}, [](int i) { return value_at(i + 5, 0.25F); });
  add_float_initializer(g, "block.layer_scale", {4, 1, 1},
                        [](int i) { return 0.75F - 0.5F * static_cast<float>(i); });
  add_float_initializer(g, "fc.weight", {3, 4}, [](int i) { return value_at(i + 2, 1.0F); });
  add_float_scalar(g, "sqrt2", std::sqrt(2.0F));
  add_float_scalar(g, "one", 1.0F);
  add_float_scalar(g, "half", 0.5F);
  add_node(g, "Conv", "/stem/Conv", {"x", "stem.weight"}, "c");
  if (region) {
    region(g);
  } else {
    add_ints_attribute(add_node(g, "Transpose", "/norm/Transpose", {"c"}, "t"), "perm", {0, 2, 3, 1});
    pb::NodeProto& ln =
        add_node(g, "LayerNormalization", "/norm/LayerNormalization", {"t", "norm.weight", "norm.bias"}, "n");
    add_float_attribute(ln, "epsilon", 1e-6F);
    add_ints_attribute(add_node(g, "Transpose", "/fc1/Transpose", {"fc1.weight"}, "w1t"), "perm", {1, 0});
    add_node(g, "MatMul", "/fc1/MatMul", {"n", "w1t"}, "m1");
    add_node(g, "Add", "/fc1/Add", {"fc1.bias", "m1"}, "a1");
    add_node(g, "Div", "/gelu/Div", {"a1", "sqrt2"}, "d");
    add_node(g, "Erf", "/gelu/Erf", {"d"}, "e");
    add_node(g, "Add", "/gelu/Add", {"e", "one"}, "e1");
    add_node(g, "Mul", "/gelu/Mul", {"a1", "e1"}, "g0");
    add_node(g, "Mul", "/gelu/Mul_1", {"g0", "half"}, "gl");
    add_node(g, "MatMul", "/fc2/MatMul", {"gl", "fc2.weight"}, "m2");
    add_node(g, "Add", "/fc2/Add", {"m2", "fc2.bias"}, "a2");
    add_ints_attribute(add_node(g, "Transpose", "/back/Transpose", {"a2"}, "b"), "perm", {0, 3, 1, 2});
  }
  add_node(g, "Mul", "/Mul", {"block.layer_scale", "b"}, "s");
  add_node(g, "Add", "/Add", {"s", "c"}, "r");
  add_node(g, "GlobalAveragePool", "/pool", {"r"}, "p");
  add_node(g, "Flatten", "/flatten", {"p"}, "f");
  pb::NodeProto& gemm = add_node(g, "Gemm", "/fc/Gemm", {"f", "fc.weight"}, "y");
  add_int_attribute(gemm, "transB", 1);
  g.add_output()->set_name("y");
  return m;
}

std::vector<double> param(const Model& m, const std::string& name) {
  for (const auto& p : m.parameters()) {
    if (p.name == name) return testing::host_values(p.value);
  }
  ADD_FAILURE() << "no parameter " << name;
  return {};
}

// The logits by hand for x [1, 3, 5, 5] from the model's parameters.
std::vector<double> logits_by_hand(const Model& m, const std::vector<double>& xv) {
  const std::vector<double> stem = param(m, "stem.weight"), gamma = param(m, "norm.weight"),
                            beta = param(m, "norm.bias"), w1 = param(m, "fc1.weight"),
                            b1 = param(m, "fc1.bias"), w2 = param(m, "fc2.weight"), b2 = param(m, "fc2.bias"),
                            ls = param(m, "block.layer_scale"), fc = param(m, "fc.weight");
  std::vector<double> pooled(4, 0.0), logits(3, 0.0);
  for (int i = 0; i < 25; ++i) {
    std::vector<double> c(4, 0.0), n(4), h(6);
    double mean = 0.0, var = 0.0;
    for (int k = 0; k < 4; ++k) {
      for (int j = 0; j < 3; ++j) c[k] += stem[k * 3 + j] * xv[j * 25 + i];
      mean += c[k] / 4.0;
    }
    for (const double v : c) var += (v - mean) * (v - mean) / 4.0;
    for (int k = 0; k < 4; ++k)
      n[k] = (c[k] - mean) / std::sqrt(var + static_cast<double>(1e-6F)) * gamma[k] + beta[k];
    for (int o = 0; o < 6; ++o) {
      double a = b1[o];
      for (int k = 0; k < 4; ++k) a += w1[o * 4 + k] * n[k];  // nn.Linear's [out, in]
      h[o] = 0.5 * a * (1.0 + std::erf(a / std::sqrt(2.0)));
    }
    for (int k = 0; k < 4; ++k) {
      double a = b2[k];
      for (int o = 0; o < 6; ++o) a += w2[k * 6 + o] * h[o];
      pooled[k] += (ls[k] * a + c[k]) / 25.0;
    }
  }
  for (int o = 0; o < 3; ++o) {
    for (int k = 0; k < 4; ++k) logits[o] += fc[o * 4 + k] * pooled[k];
  }
  return logits;
}

std::vector<std::string> kinds(const Model& m) {
  std::vector<std::string> out;
  for (const Graph::NodeView& n : dynamic_cast<const Graph&>(m.root()).nodes()) {
    if (n.layer != nullptr) out.emplace_back(n.layer->kind());
  }
  return out;
}
#endif

class OnnxChannelsLast : public engine::testing::OnnxTest {};

#if ENGINE_HAVE_ONNX
TEST_F(OnnxChannelsLast, ACNBlockImportsAsChannelLayersWithTheFilesNamesAndTheLogitsByHand) {
  Model m = import_proto(block_model());
  m.finalize(testing::cpu_context(DType::F64), 5);
  EXPECT_EQ(kinds(m),
            (std::vector<std::string>{"Conv2d", "ChannelLayerNorm", "ChannelLinear", "GELU", "ChannelLinear",
                                      "ChannelAffine", "GlobalAvgPool", "Flatten", "Linear"}));
  std::vector<std::string> names;
  for (const auto& p : m.parameters()) names.push_back(p.name + " " + shape_str(p.value.shape()));
  EXPECT_EQ(names,
            (std::vector<std::string>{"stem.weight [4, 3, 1, 1]", "norm.weight [4]", "norm.bias [4]",
                                      "fc1.weight [6, 4]", "fc1.bias [6]", "fc2.weight [4, 6]",
                                      "fc2.bias [4]", "block.layer_scale [4, 1, 1]", "fc.weight [3, 4]"}));
  // fc2's file holds [in, out] (a MatMul by a constant): the engine keeps it as nn.Linear does, [out, in].
  EXPECT_EQ(param(m, "fc2.weight")[1 * 6 + 2], static_cast<double>(value_at(2 * 4 + 1 + 1, 0.5F)));
  const Tensor x = testing::random_tensor({1, 3, 5, 5}, DType::F64, 31, -3.0, 3.0);
  const std::vector<double> got = testing::host_values(m.forward(x, Mode::Eval));
  const std::vector<double> want = logits_by_hand(m, testing::host_values(x));
  for (int o = 0; o < 3; ++o) EXPECT_NEAR(got[o], want[o], 1e-12) << "logit " << o;
}

TEST_F(OnnxChannelsLast, ExportedAndImportedAgainIsTheSameNetwork) {
  const ExecutionContext ctx = testing::cpu_context(DType::F64);
  Model net = import_proto(block_model());
  net.finalize(ctx, 5);
  const std::string path = (engine::testing::scratch_dir("onnx_cl_", "net") / "net.onnx").string();
  onnx::export_model(net, path);
  Model again = onnx::import_model(path);
  again.finalize(ctx, 99);
  EXPECT_EQ(kinds(again), kinds(net));
  ASSERT_EQ(again.parameters().size(), net.parameters().size());
  for (std::size_t i = 0; i < net.parameters().size(); ++i)
    EXPECT_EQ(again.parameters()[i].name, net.parameters()[i].name);
  engine::testing::expect_same_network(net, again,
                                       testing::random_tensor({2, 3, 5, 5}, DType::F64, 17, -3.0, 3.0),
                                       testing::random_tensor({2, 3}, DType::F64, 23));
}

// --layout nhwc: the same block's logits and gradients, float64 (the same sums per pixel and per channel, in
// other memory orders: far below 1e-12) and float32 (the 1x1 convolutions sum in oneDNN's order per layout:
// within 1e-5 of the values' scale, a few float32 roundings of sums of 4 to 6 terms along the net).
TEST_F(OnnxChannelsLast, NhwcComputesWhatNchwComputes) {
  for (const DType dtype : {DType::F64, DType::F32}) {
    std::vector<double> got[2][2];
    for (const Layout layout : {Layout::NCHW, Layout::NHWC}) {
      ExecutionContext ctx = testing::cpu_context(dtype);
      ctx.layout = layout;
      Model m = import_proto(block_model());
      m.finalize(ctx, 5);
      const Tensor x = testing::random_tensor({2, 3, 5, 5}, dtype, 17, -3.0, 3.0);
      got[layout == Layout::NHWC][0] = testing::host_values(m.forward(x, Mode::Train));
      m.backward(testing::random_tensor({2, 3}, dtype, 23));
      got[layout == Layout::NHWC][1] = testing::host_values(m.flat_gradients());
    }
    const double tol = dtype == DType::F64 ? 1e-12 : 1e-5;
    for (int k = 0; k < 2; ++k) {
      ASSERT_EQ(got[1][k].size(), got[0][k].size());
      double scale = 1.0;
      for (const double v : got[0][k]) scale = std::max(scale, std::abs(v));
      for (std::size_t i = 0; i < got[0][k].size(); ++i)
        EXPECT_NEAR(got[1][k][i], got[0][k][i], tol * scale) << (k ? "gradient " : "logit ") << i;
    }
  }
}

// --precision bf16 (bf16 activations and weights' mirror, float32 masters): the block trains; its logits and
// gradients are float32's within bf16's rounding (2^-9 relative per rounding; about ten roundings in series
// from the input to the logits and back, each at most 2^-9 of the values' scale: 2^-5 bounds them all).
TEST_F(OnnxChannelsLast, Bf16AutocastIsFloat32WithinBf16Rounding) {
  std::vector<double> got[2][2];
  for (const bool bf16 : {false, true}) {
    ExecutionContext ctx = testing::cpu_context(DType::F32);
    ctx.autocast_bf16 = bf16;
    Model m = import_proto(block_model());
    m.finalize(ctx, 5);
    const Tensor x = testing::random_tensor({2, 3, 5, 5}, DType::F32, 17, -3.0, 3.0);
    got[bf16][0] = testing::host_values(m.forward(x, Mode::Train));
    m.backward(testing::random_tensor({2, 3}, DType::F32, 23));
    got[bf16][1] = testing::host_values(m.flat_gradients());
  }
  for (int k = 0; k < 2; ++k) {
    ASSERT_EQ(got[1][k].size(), got[0][k].size());
    double scale = 0.0;
    for (const double v : got[0][k]) scale = std::max(scale, std::abs(v));
    double worst = 0.0;
    for (std::size_t i = 0; i < got[0][k].size(); ++i)
      worst = std::max(worst, std::abs(got[1][k][i] - got[0][k][i]));
    EXPECT_LE(worst, 0x1p-5 * scale) << (k ? "gradients" : "logits");
    EXPECT_GT(worst, 0.0) << "bf16 rounding shows somewhere (the autocast path ran)";
  }
}

TEST_F(OnnxChannelsLast, WhatARegionCannotTakeIsRefusedByName) {
  auto into = [](pb::GraphProto& g) {
    add_ints_attribute(add_node(g, "Transpose", "/t", {"c"}, "t"), "perm", {0, 2, 3, 1});
  };
  const std::string per_channel = import_proto_error(block_model([&](pb::GraphProto& g) {
    into(g);
    add_float_initializer(g, "k", {4}, [](int) { return 2.0F; });
    add_node(g, "Mul", "/mul", {"t", "k"}, "u");
    add_ints_attribute(add_node(g, "Transpose", "/back", {"u"}, "b"), "perm", {0, 3, 1, 2});
  }));
  EXPECT_NE(per_channel.find("node '/mul' (Mul): input 1 'k' [4] is not a scalar"), std::string::npos)
      << per_channel;
  const std::string reduce = import_proto_error(block_model([&](pb::GraphProto& g) {
    into(g);
    add_node(g, "ReduceMean", "/mean", {"t"}, "b");
  }));
  EXPECT_NE(reduce.find("node '/mean' (ReduceMean): it reads 't' in channels-last order"), std::string::npos)
      << reduce;
  const std::string axis = import_proto_error(block_model([&](pb::GraphProto& g) {
    into(g);
    pb::NodeProto& ln = add_node(g, "LayerNormalization", "/ln", {"t", "norm.weight", "norm.bias"}, "n");
    add_int_attribute(ln, "axis", 1);
    add_ints_attribute(add_node(g, "Transpose", "/back", {"n"}, "b"), "perm", {0, 3, 1, 2});
  }));
  EXPECT_NE(axis.find("node '/ln' (LayerNormalization): attribute axis = 1 is not supported"),
            std::string::npos)
      << axis;
  const std::string perm = import_proto_error(block_model([&](pb::GraphProto& g) {
    into(g);
    add_ints_attribute(add_node(g, "Transpose", "/back", {"t"}, "b"), "perm", {0, 2, 1, 3});
  }));
  pb::ModelProto open = block_model();  // the region's value as the graph's output
  open.mutable_graph()->mutable_output(0)->set_name("t");
  const std::string output = import_proto_error(open);
  EXPECT_NE(output.find("the output 't' is in channels-last order"), std::string::npos) << output;
  EXPECT_NE(perm.find("node '/back' (Transpose): perm [0, 2, 1, 3] of a value in channels-last order"),
            std::string::npos)
      << perm;
}
#endif

}  // namespace
}  // namespace engine::layers
