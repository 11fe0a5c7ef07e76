// Transfer learning from an ONNX file (onnx::ImportOptions::new_head, cnn_train --new-head): a file written
// with 5 classes read for data of 3. Its classifier (a Linear, written as Gemm; or squeezenet's 1x1 Conv
// before ReLU, pooling and Flatten) gets 3 outputs, fresh values from the model's seed within PyTorch's
// U(-1/sqrt(fan_in), 1/sqrt(fan_in)) and the file's names; every other weight is the file's; --param-group
// freezes all but the head; a model whose output is no classifier is refused naming the node.

#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "layers/onnx/onnx_model.h"
#include "optim/param_groups.h"
#include "tests/common/error_of.h"
#include "tests/common/onnx_protos.h"
#include "tests/common/scratch_dirs.h"
#include "tests/cpu/layer_test_util.h"

namespace engine::layers {
namespace {

using engine::testing::error_of;

// x [3, 7, 9] -> conv 3x3 (6) -> relu -> global average pool -> flatten -> fc (classes), or, squeezenet's
// way, -> conv 1x1 (classes) -> relu -> global average pool -> flatten.
std::unique_ptr<Sequential> net(int classes, bool conv_head) {
  auto n = std::make_unique<Sequential>();
  auto features = std::make_unique<Sequential>();
  features->emplace_named<Conv2d>("0", Conv2dOptions{.in_channels = 3, .out_channels = 6, .kernel_size = 3});
  features->emplace_named<ReLU>("1");
  n->add(std::move(features), "features");
  if (conv_head) {
    n->emplace_named<Conv2d>("classifier",
                             Conv2dOptions{.in_channels = 6, .out_channels = classes, .kernel_size = 1});
    n->emplace_named<ReLU>("relu");
  }
  n->emplace_named<GlobalAvgPool>("pool");
  n->emplace_named<Flatten>("flatten");
  if (!conv_head) n->emplace_named<Linear>("fc", 6, classes);
  return n;
}

std::string exported(int classes, bool conv_head, const std::string& tag) {
  Model m("pretrained", net(classes, conv_head), {3, 7, 9});
  m.finalize(testing::cpu_context(DType::F32), 3);
  std::string path = (engine::testing::scratch_dir("onnx_new_head_", tag) / "net.onnx").string();
  onnx::export_model(m, path);
  return path;
}

onnx::ImportOptions three_classes(bool new_head) {
  onnx::ImportOptions o;
  o.sample_shape = {3, 7, 9};
  o.num_classes = 3;
  o.new_head = new_head;
  return o;
}

// The head is fresh (the seed's values, inside PyTorch's bound) and the rest the file's.
void expect_new_head(const std::string& path, const std::string& head, const Shape& head_shape, int fan_in) {
  const onnx::ImportOptions options = three_classes(false);
  const std::string refused = error_of([&] { onnx::import_model(path, options); });
  EXPECT_NE(refused.find("the data has 3 classes ([N, 3] expected) (--new-head replaces its classifier"),
            std::string::npos)
      << refused;

  onnx::ImportOptions five;
  five.sample_shape = {3, 7, 9};
  Model file = onnx::import_model(path, five);  // as written, 5 classes
  file.finalize(testing::cpu_context(DType::F32), 1);
  Model a = onnx::import_model(path, three_classes(true));
  a.finalize(testing::cpu_context(DType::F32), 11);
  Model b = onnx::import_model(path, three_classes(true));
  b.finalize(testing::cpu_context(DType::F32), 12);
  ASSERT_EQ(a.parameters().size(), file.parameters().size());
  EXPECT_EQ(a.forward(testing::random_tensor({2, 3, 7, 9}, DType::F32, 4), Mode::Eval).shape(),
            (Shape{2, 3}));
  for (std::size_t i = 0; i < a.parameters().size(); ++i) {
    const Parameter& p = a.parameters()[i];
    EXPECT_EQ(p.name, file.parameters()[i].name);  // PyTorch's names kept
    const std::vector<double> va = testing::host_values(p.value),
                              vb = testing::host_values(b.parameters()[i].value);
    if (!p.name.starts_with(head + ".")) {
      EXPECT_EQ(va, testing::host_values(file.parameters()[i].value)) << p.name << ": the file's values";
      continue;
    }
    if (p.name == head + ".weight") {
      EXPECT_EQ(p.value.shape(), head_shape);
    }
    EXPECT_NE(va, vb) << p.name << ": the seed's values, not the file's or zeros";
    const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
    double largest = 0.0;
    for (const double v : va) largest = std::max(largest, std::fabs(v));
    EXPECT_LE(largest, bound) << p.name;
    EXPECT_GT(largest, 0.0) << p.name;
  }

  // Everything but the head frozen: the first rule that selects a parameter wins.
  const std::vector<optim::ParamGroupRule> rules{optim::parse_param_group_rule(head + ".:lr=1"),
                                                 optim::parse_param_group_rule(".:frozen")};
  const std::vector<cpu::SgdGroup> groups = optim::param_groups_for(a, rules, 5e-4);
  for (const Parameter& p : a.parameters()) {
    for (const cpu::SgdGroup& g : groups) {
      if (g.begin <= p.offset && p.offset < g.end) {
        EXPECT_EQ(g.frozen, !p.name.starts_with(head + ".")) << p.name;
      }
    }
  }
}

TEST(OnnxNewHead, LinearClassifierReplaced) {
  SKIP_WITHOUT_ONNX();
  expect_new_head(exported(5, false, "linear"), "fc", {3, 6}, 6);
}

TEST(OnnxNewHead, OneByOneConvClassifierReplaced) {
  SKIP_WITHOUT_ONNX();
  expect_new_head(exported(5, true, "conv"), "classifier", {3, 6, 1, 1}, 6);
}

TEST(OnnxNewHead, RefusesAnOutputWithoutAClassifier) {
  SKIP_WITHOUT_ONNX();
  auto n = std::make_unique<Sequential>();
  n->emplace_named<Conv2d>("conv", Conv2dOptions{.in_channels = 3, .out_channels = 5, .kernel_size = 3});
  n->emplace_named<GlobalAvgPool>("pool");
  n->emplace_named<Flatten>("flatten");
  n->emplace_named<ReLU>("relu");
  Model m("odd", std::move(n), {3, 7, 9});
  m.finalize(testing::cpu_context(DType::F32), 3);
  const std::string path = (engine::testing::scratch_dir("onnx_new_head_", "odd") / "net.onnx").string();
  onnx::export_model(m, path);
  const std::string e = error_of([&] { onnx::import_model(path, three_classes(true)); });
  EXPECT_NE(e.find("--new-head: the classifier 'conv.weight' [5, 3, 3, 3] is not a 1x1 convolution"),
            std::string::npos)
      << e;
  onnx::ImportOptions no_classes;
  no_classes.new_head = true;
  EXPECT_NE(error_of([&] {
              onnx::import_model(path, no_classes);
            }).find("--new-head needs the data's number of classes"),
            std::string::npos);
}

#if ENGINE_HAVE_ONNX
// PyTorch's newer exporter writes a Linear as MatMul by the transposed weight [in, out], then Add of the
// bias.
TEST(OnnxNewHead, MatMulAndAddClassifierReplaced) {
  ::onnx::ModelProto m;
  ::onnx::GraphProto& g = engine::testing::start_model(m, 17, {4});
  engine::testing::add_float_initializer(g, "fc.weight", {4, 5},
                                         [](int i) { return 0.1F * static_cast<float>(i); });
  engine::testing::add_float_initializer(g, "fc.bias", {5},
                                         [](int i) { return 0.5F + static_cast<float>(i); });
  engine::testing::add_node(g, "MatMul", "/fc/MatMul", {"x", "fc.weight"}, "h");
  engine::testing::add_node(g, "Add", "/fc/Add", {"h", "fc.bias"}, "y");
  g.add_output()->set_name("y");
  onnx::ImportOptions o;
  o.num_classes = 3;
  o.new_head = true;
  Model a = engine::testing::import_proto(m, o);
  a.finalize(testing::cpu_context(DType::F32), 5);
  ASSERT_EQ(a.parameters().size(), 2U);
  EXPECT_EQ(a.parameters()[0].name, "fc.weight");
  EXPECT_EQ(a.parameters()[0].value.shape(), (Shape{3, 4}));  // the engine's Linear: [out, in]
  EXPECT_EQ(a.parameters()[1].value.shape(), (Shape{3}));
  for (const Parameter& p : a.parameters()) {
    for (const double v : testing::host_values(p.value)) EXPECT_LE(std::fabs(v), 0.5) << p.name;  // 1/sqrt(4)
  }
  EXPECT_EQ(a.forward(testing::random_tensor({2, 4}, DType::F32, 4), Mode::Eval).shape(), (Shape{2, 3}));
}
#endif

}  // namespace
}  // namespace engine::layers
