// An imported ONNX network in the CPU's blocked layouts (nChw16c, nChw8c; core/layout.h) against NCHW: a
// hand-made file with what zoo models put between their convolutions besides BatchNorm and ReLU: a
// squeeze-excite gate (GlobalAveragePool, 1x1 convolutions, Sigmoid, Mul broadcasting [N, C, 1, 1] over the
// activation), a per-channel layer scale ([C, 1, 1] constant), a Concat along the channels of two blocked
// tensors (whole blocks) and one of a blocked and a plain one (8 channels: no block of 16), then pooling and
// a Gemm. One training step (forward, loss, backward, SGD) from the same seeds in each layout. Skips in
// builds without libonnx-dev.

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/common/onnx_protos.h"
#include "tests/cpu/layout_model_util.h"

namespace engine::layers {
namespace {

#if ENGINE_HAVE_ONNX
namespace pb = ::onnx;
using engine::testing::add_float_initializer;
using engine::testing::add_int_attribute;
using engine::testing::add_ints_attribute;
using engine::testing::add_node;
using engine::testing::import_proto;

float value_at(int i, float scale) { return scale * (-1.0F + 0.25F * static_cast<float>((i * 7) % 9)); }

void conv(pb::GraphProto& g, const std::string& name, const std::string& in, const std::string& out,
          std::int64_t c, std::int64_t k, std::int64_t r) {
  add_float_initializer(g, name + ".weight", {k, c, r, r}, [&](int i) {
    return value_at(i + static_cast<int>(k), 1.0F / static_cast<float>(c));
  });
  add_float_initializer(g, name + ".bias", {k}, [](int i) { return value_at(i + 2, 0.25F); });
  pb::NodeProto& n = add_node(g, "Conv", "/" + name + "/Conv", {in, name + ".weight", name + ".bias"}, out);
  add_ints_attribute(n, "kernel_shape", {r, r});
  add_ints_attribute(n, "pads", {r / 2, r / 2, r / 2, r / 2});
}

// x [N, 3, H, W] -> conv 3x3 (16) + Relu = a; squeeze-excite: a * Sigmoid(conv(Relu(conv(GAP(a))))) = e;
// scale [16, 1, 1] * e = s; Concat(s, a) [32] -> conv 1x1 (16) = m; Concat(m, conv 1x1 (8) of m) [24] ->
// GlobalAveragePool -> Flatten -> Gemm (10 classes).
pb::ModelProto se_concat_model() {
  pb::ModelProto m;
  pb::GraphProto& g = engine::testing::start_model(m, 17, {3, 7, 7});
  conv(g, "stem", "x", "c", 3, 16, 3);
  add_node(g, "Relu", "/stem/Relu", {"c"}, "a");
  add_node(g, "GlobalAveragePool", "/se/pool", {"a"}, "p");
  conv(g, "se.fc1", "p", "q1", 16, 4, 1);
  add_node(g, "Relu", "/se/Relu", {"q1"}, "q2");
  conv(g, "se.fc2", "q2", "q3", 4, 16, 1);
  add_node(g, "Sigmoid", "/se/Sigmoid", {"q3"}, "gate");
  add_node(g, "Mul", "/se/Mul", {"a", "gate"}, "e");
  add_float_initializer(g, "layer_scale", {16, 1, 1},
                        [](int i) { return 0.5F + 0.125F * static_cast<float>(i % 5); });
  add_node(g, "Mul", "/scale/Mul", {"layer_scale", "e"}, "s");
  add_int_attribute(add_node(g, "Concat", "/cat1", {"s", "a"}, "cat1"), "axis", 1);
  conv(g, "mix", "cat1", "mx", 32, 16, 1);
  conv(g, "side", "mx", "sd", 16, 8, 1);
  add_int_attribute(add_node(g, "Concat", "/cat2", {"mx", "sd"}, "cat2"), "axis", 1);
  add_node(g, "GlobalAveragePool", "/pool", {"cat2"}, "gp");
  add_node(g, "Flatten", "/flatten", {"gp"}, "f");
  add_float_initializer(g, "fc.weight", {10, 24}, [](int i) { return value_at(i + 3, 0.5F); });
  add_float_initializer(g, "fc.bias", {10}, [](int i) { return value_at(i, 0.1F); });
  add_int_attribute(add_node(g, "Gemm", "/fc/Gemm", {"f", "fc.weight", "fc.bias"}, "y"), "transB", 1);
  g.add_output()->set_name("y");
  return m;
}

template <typename T>
layout_model::Step step(DType dtype, Layout layout) {
  Model m = import_proto(se_concat_model());
  m.finalize(layout_model::context(dtype, layout), /*init_seed=*/17);
  return layout_model::one_step_of<T>(m, 7, dtype);
}

// float64: the blocked run computes every value from the same operands in the same order as the NCHW run
// (the reference convolutions and pooling run NCHW between exact reorders, the gate's Mul and the layer scale
// too, the Concats copy), so its bits. float32: oneDNN's 1x1 convolutions sum in another order per layout
// (and the NCHW run's may take the GEMM path): a few float32 roundings of sums of at most 32 products per
// layer, over six layers forward and back: 1e-5 of the values' scale (onnx_channels_last_test's bound).
TEST(OnnxBlocked, SqueezeExciteAndConcatTrainOneStepAsInNchw) {
  SKIP_WITHOUT_ONNX();
  const layout_model::Step nchw64 = step<double>(DType::F64, Layout::NCHW);
  const layout_model::Step nchw32 = step<float>(DType::F32, Layout::NCHW);
  for (const Layout layout : {Layout::NCHW16c, Layout::NCHW8c}) {
    const std::string what(layout_name(layout));
    const layout_model::Step b64 = step<double>(DType::F64, layout);
    EXPECT_EQ(b64.logits, nchw64.logits) << what;
    EXPECT_EQ(b64.grads, nchw64.grads) << what;
    EXPECT_EQ(b64.params, nchw64.params) << what;
    layout_model::compare(step<float>(DType::F32, layout), nchw32, 1e-5, what + " float32");
  }
}
#else
TEST(OnnxBlocked, SqueezeExciteAndConcatTrainOneStepAsInNchw) { SKIP_WITHOUT_ONNX(); }
#endif

}  // namespace
}  // namespace engine::layers
