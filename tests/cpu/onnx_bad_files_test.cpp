// The importer on hand-made ONNX files: a small valid model keeps its initializers' names and values; every
// bad file of ../shared/BAD_INPUTS.md's "Model files (ONNX)" gets an engine::Error naming what is wrong
// (the node, op type and attribute for what the engine cannot train), and every truncation of a valid file
// gives an error or a model, never a crash. Skips in builds without libonnx-dev.

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "data/file_io.h"
#include "layers/onnx/onnx_model.h"
#include "tests/common/environment.h"
#include "tests/common/error_of.h"
#include "tests/common/onnx_protos.h"
#include "tests/cpu/layer_test_util.h"

namespace engine::layers {
namespace {

#if ENGINE_HAVE_ONNX
namespace pb = ::onnx;

// Small values that vary (the test checks the names and values survive).
void add_tensor(pb::GraphProto& g, const std::string& name, const std::vector<std::int64_t>& dims) {
  engine::testing::add_float_initializer(g, name, dims,
                                         [](int i) { return 0.01F * static_cast<float>(i % 7) - 0.02F; });
}

using engine::testing::add_ints_attribute;
using engine::testing::add_node;
using engine::testing::import_proto;
using engine::testing::import_proto_error;

// x [N, 3, 8, 8] -> conv 3x3 (4 filters, pad 1) -> relu -> + conv output (a residual sum) -> global average
// pool -> flatten -> gemm to 10 classes.
pb::ModelProto small_model() {
  pb::ModelProto m;
  pb::GraphProto& g = engine::testing::start_model(m, 17, {3, 8, 8});
  add_tensor(g, "conv.weight", {4, 3, 3, 3});
  add_tensor(g, "conv.bias", {4});
  add_tensor(g, "fc.weight", {10, 4});
  add_tensor(g, "fc.bias", {10});
  pb::NodeProto& conv = add_node(g, "Conv", "/conv/Conv", {"x", "conv.weight", "conv.bias"}, "c");
  add_ints_attribute(conv, "pads", {1, 1, 1, 1});
  add_ints_attribute(conv, "kernel_shape", {3, 3});
  add_node(g, "Relu", "/relu/Relu", {"c"}, "r");
  add_node(g, "Add", "/Add", {"r", "c"}, "s");
  add_node(g, "GlobalAveragePool", "/pool", {"s"}, "p");
  add_node(g, "Flatten", "/flatten", {"p"}, "f");
  pb::NodeProto& fc = add_node(g, "Gemm", "/fc/Gemm", {"f", "fc.weight", "fc.bias"}, "y");
  engine::testing::add_int_attribute(fc, "transB", 1);
  g.add_output()->set_name("y");
  return m;
}
#endif

class OnnxBadFiles : public engine::testing::OnnxTest {};

#if ENGINE_HAVE_ONNX
TEST_F(OnnxBadFiles, ASmallValidModelKeepsItsNamesAndValuesAndTrains) {
  Model m = import_proto(small_model(), {.sample_shape = {3, 8, 8},
                                         .num_classes = 10,
                                         .bound_inputs = {},
                                         .first_output_only = false,
                                         .make_batchnorm = {}});
  m.finalize(testing::cpu_context(DType::F64), 3);
  std::vector<std::string> names;
  for (const Parameter& p : m.parameters()) names.push_back(p.name);
  EXPECT_EQ(names, (std::vector<std::string>{"conv.weight", "conv.bias", "fc.weight", "fc.bias"}));
  EXPECT_DOUBLE_EQ(testing::host_values(m.parameters()[2].value)[3], static_cast<double>(0.01F * 3 - 0.02F));
  // The residual sum's backward against central differences.
  const Tensor x = testing::random_tensor({2, 3, 8, 8}, DType::F64, 4);
  const Tensor labels = testing::random_labels(2, 10, 5);
  testing::ModelCheck check;
  check.kind = testing::CheckKind::Coordinates;
  check.group_depth = 0;
  check.options.step = 1e-6;
  check.options.tolerance = 1e-6;
  const engine::testing::GradCheckResult r = testing::check_model_gradients(m, x, labels, check);
  EXPECT_TRUE(r.ok) << r.report;
  EXPECT_GT(r.checked, 0U);
}

TEST_F(OnnxBadFiles, EachIsRefusedNamingWhatIsWrong) {
  EXPECT_NE(import_proto_error(pb::ModelProto()).find("empty"), std::string::npos);
  EXPECT_NE(engine::testing::error_of([] {
              onnx::import_model_bytes("not an onnx model at all", "t.onnx");
            }).find("not an ONNX model"),
            std::string::npos);
  EXPECT_NE(engine::testing::error_of([] {
              onnx::import_model("/nonexistent/m.onnx");
            }).find("/nonexistent/m.onnx"),
            std::string::npos);

  pb::ModelProto opset = small_model();
  opset.mutable_opset_import(0)->set_version(21);
  EXPECT_NE(import_proto_error(opset).find("opset 21 is not supported"), std::string::npos);

  pb::ModelProto cycle = small_model();
  cycle.mutable_graph()->mutable_node(1)->set_input(0, "s");  // relu reads the sum that reads relu
  EXPECT_NE(import_proto_error(cycle).find("cycle"), std::string::npos) << import_proto_error(cycle);

  pb::ModelProto dangling = small_model();
  dangling.mutable_graph()->mutable_node(1)->set_input(0, "ghost");
  EXPECT_NE(import_proto_error(dangling).find("'/relu/Relu' (Relu) reads 'ghost'"), std::string::npos);

  pb::ModelProto size = small_model();
  size.mutable_graph()->mutable_initializer(0)->add_float_data(1.0F);
  EXPECT_NE(import_proto_error(size).find("initializer 'conv.weight': 109 values for shape [4, 3, 3, 3]"),
            std::string::npos)
      << import_proto_error(size);

  pb::ModelProto twice = small_model();
  twice.mutable_graph()->mutable_node(2)->set_output(0, "r");
  EXPECT_NE(import_proto_error(twice).find("two nodes write 'r'"), std::string::npos);

  // Grouped and dilated convolutions are read (tests/cpu/conv2d_grouped_layer_test.cpp); what they cannot be
  // is refused: a group that does not divide the filters, a weight whose channels times group miss the
  // input's, dilations that differ between the axes.
  auto with_group = [](int group) {
    pb::ModelProto m = small_model();
    engine::testing::add_int_attribute(*m.mutable_graph()->mutable_node(0), "group", group);
    return m;
  };
  EXPECT_NE(
      import_proto_error(with_group(3))
          .find(
              "node '/conv/Conv' (Conv): attribute group = 3 does not divide the weight's 4 output channels"),
      std::string::npos)
      << import_proto_error(with_group(3));
  EXPECT_NE(import_proto_error(with_group(2))
                .find("weight 'conv.weight' [4, 3, 3, 3] needs 6 input channels, the "
                      "input has 3"),
            std::string::npos)
      << import_proto_error(with_group(2));

  pb::ModelProto dilation = small_model();
  add_ints_attribute(*dilation.mutable_graph()->mutable_node(0), "dilations", {2, 1});
  EXPECT_NE(import_proto_error(dilation).find(
                "(Conv): attribute dilations = [2, 1] is not supported (equal dilations along both axes)"),
            std::string::npos)
      << import_proto_error(dilation);

  // Conv: pads [top, left, bottom, right] may differ between the axes (inception_v3's [0, 3, 0, 3]), not
  // between the two ends of one; kernel_shape must be the weight's.
  pb::ModelProto uneven = small_model();
  uneven.mutable_graph()->mutable_node(0)->mutable_attribute(0)->set_ints(2, 0);  // pads [1, 1, 0, 1]
  EXPECT_NE(
      import_proto_error(uneven).find("(Conv): attribute pads = [1, 1, 0, 1] is not supported (top, left, "
                                      "bottom, right: each axis padded alike at both ends)"),
      std::string::npos)
      << import_proto_error(uneven);
  pb::ModelProto kernel = small_model();
  kernel.mutable_graph()->mutable_node(0)->mutable_attribute(1)->set_ints(1, 1);  // kernel_shape [3, 1]
  EXPECT_NE(import_proto_error(kernel).find(
                "(Conv): attribute kernel_shape = [3, 1] is not the weight 'conv.weight' "
                "[4, 3, 3, 3]'s 3x3"),
            std::string::npos)
      << import_proto_error(kernel);

  // AveragePool: pads must be the same at both ends of an axis.
  pb::ModelProto avg = small_model();
  pb::NodeProto& pool = *avg.mutable_graph()->mutable_node(3);
  pool.set_op_type("AveragePool");
  add_ints_attribute(pool, "kernel_shape", {3, 3});
  add_ints_attribute(pool, "pads", {1, 1, 0, 0});
  EXPECT_NE(
      import_proto_error(avg).find("(AveragePool): attribute pads = [1, 1, 0, 0] is not supported (2-d, the "
                                   "same padding at both ends of an axis)"),
      std::string::npos)
      << import_proto_error(avg);

  pb::ModelProto op = small_model();
  op.mutable_graph()->mutable_node(1)->set_op_type("Softsign");
  EXPECT_NE(import_proto_error(op).find("node '/relu/Relu' (Softsign): op Softsign is not supported"),
            std::string::npos);

  EXPECT_NE(import_proto_error(small_model(), {.sample_shape = {1, 28, 28},
                                               .num_classes = 0,
                                               .bound_inputs = {},
                                               .first_output_only = false,
                                               .make_batchnorm = {}})
                .find("takes samples [3, 8, 8] but the data gives [1, 28, 28]"),
            std::string::npos);
  EXPECT_NE(import_proto_error(small_model(), {.sample_shape = {3, 8, 8},
                                               .num_classes = 100,
                                               .bound_inputs = {},
                                               .first_output_only = false,
                                               .make_batchnorm = {}})
                .find("100 classes"),
            std::string::npos);
}

// Every prefix of a valid file: an engine::Error or a model, never a crash (ASan runs this too).
// auto_pad SAME_UPPER on the 3x3 stride-1 conv is its pads [1, 1, 1, 1]: the same network. With stride 2 on
// 8x8 the total is (4 - 1) * 2 + 3 - 8 = 1, odd: refused naming the pads it would need.
// A node with fewer inputs than its op requires is refused by name before any node is read (two such files
// were found by tests/fuzz/fuzz_onnx: the importer read an input the node does not have; both are kept in its
// corpus, which scripts/fuzz.sh replays).
TEST_F(OnnxBadFiles, ANodeWithoutTheInputsItsOpRequiresIsRefusedByName) {
  auto corpus_error = [](const std::string& name) {
    const std::vector<std::uint8_t> file =
        engine::data::read_file((engine::testing::repo_root() / "tests/fuzz/corpus/onnx" / name).string());
    const std::string bytes(file.begin(), file.end());
    return engine::testing::error_of([&] { onnx::import_model_bytes(bytes, name); });
  };
  const std::string reshape = corpus_error("reshape_without_shape.onnx");
  EXPECT_NE(reshape.find("(Reshape): it has 1 input where Reshape takes at least 2"), std::string::npos)
      << reshape;
  const std::string mul = corpus_error("mul_without_inputs.onnx");
  EXPECT_NE(mul.find("(Mul): it has 0 inputs where Mul takes at least 2"), std::string::npos) << mul;

  pb::ModelProto bn = small_model();  // the Relu made a BatchNormalization with its scale and bias only
  pb::NodeProto& relu = *bn.mutable_graph()->mutable_node(1);
  relu.set_op_type("BatchNormalization");
  relu.add_input("conv.bias");
  relu.add_input("conv.bias");
  EXPECT_NE(import_proto_error(bn).find("node '/relu/Relu' (BatchNormalization): it has 3 inputs where "
                                        "BatchNormalization takes at least 5"),
            std::string::npos)
      << import_proto_error(bn);

  pb::ModelProto empty = small_model();  // the Gemm's weight named ""
  empty.mutable_graph()->mutable_node(5)->set_input(1, "");
  EXPECT_NE(import_proto_error(empty).find("node '/fc/Gemm' (Gemm): its required input 1 is empty"),
            std::string::npos)
      << import_proto_error(empty);

  // The new head's walk reads the classifier's inputs before any node is converted: checked before it too.
  pb::ModelProto head = small_model();
  head.mutable_graph()->mutable_node(5)->mutable_input()->RemoveLast();
  head.mutable_graph()->mutable_node(5)->mutable_input()->RemoveLast();
  EXPECT_NE(import_proto_error(head, {.sample_shape = {},
                                      .num_classes = 5,
                                      .bound_inputs = {},
                                      .first_output_only = false,
                                      .make_batchnorm = {},
                                      .new_head = true})
                .find("(Gemm): it has 1 input where Gemm takes at least 2"),
            std::string::npos);
}

TEST_F(OnnxBadFiles, AutoPadSameIsItsExplicitPadsOrRefusedNamingThem) {
  pb::ModelProto same = small_model();
  pb::NodeProto& conv = *same.mutable_graph()->mutable_node(0);
  conv.mutable_attribute()->erase(conv.mutable_attribute()->begin());  // the pads
  pb::AttributeProto& a = *conv.add_attribute();
  a.set_name("auto_pad");
  a.set_type(pb::AttributeProto::STRING);
  a.set_s("SAME_UPPER");
  const ExecutionContext ctx = testing::cpu_context(DType::F64);
  Model explicit_pads = import_proto(small_model());
  Model auto_pad = onnx::import_model_bytes(same.SerializeAsString(), "same.onnx");
  explicit_pads.finalize(ctx, 1);
  auto_pad.finalize(ctx, 2);
  const Tensor x = testing::random_tensor({2, 3, 8, 8}, DType::F64, 4);
  EXPECT_EQ(testing::host_values(auto_pad.forward(x, Mode::Eval)),
            testing::host_values(explicit_pads.forward(x, Mode::Eval)));

  add_ints_attribute(conv, "strides", {2, 2});
  EXPECT_NE(import_proto_error(same).find(
                "node '/conv/Conv' (Conv): auto_pad = SAME_UPPER on the input [1, 3, 8, 8] "
                "needs pads [0, 0, 1, 1] (begin h, w, end h, w): uneven ends"),
            std::string::npos)
      << import_proto_error(same);
  a.set_s("SAME_LOWER");
  EXPECT_NE(import_proto_error(same).find("needs pads [1, 1, 0, 0]"), std::string::npos)
      << import_proto_error(same);
  a.set_s("SAME");
  EXPECT_NE(import_proto_error(same).find(
                "attribute auto_pad = SAME is not one of NOTSET, VALID, SAME_UPPER, SAME_LOWER"),
            std::string::npos)
      << import_proto_error(same);
}

TEST_F(OnnxBadFiles, EveryTruncationIsAnErrorOrAModel) {
  const std::string bytes = small_model().SerializeAsString();
  int errors = 0;
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    try {
      onnx::import_model_bytes(bytes.substr(0, n), "cut.onnx");
    } catch (const Error&) {
      ++errors;
    }
  }
  EXPECT_GT(errors, static_cast<int>(bytes.size()) / 2);
}

// A file of PyTorch's newer exporter (opset 18 and up) with convolutions and no BatchNormalization: its graph
// optimizer may have folded the BatchNorms away (README, "Your own model"), so the import warns, naming the
// file; an older opset or another producer imports silently.
TEST_F(OnnxBadFiles, APyTorchFileWithoutBatchNormFromTheNewerExporterIsWarnedOf) {
  auto warning = [](const std::string& producer, std::int64_t opset) {
    pb::ModelProto m = small_model();
    m.set_producer_name(producer);
    m.mutable_opset_import(0)->set_version(opset);
    const std::string bytes = m.SerializeAsString();
    ::testing::internal::CaptureStderr();
    onnx::import_model_bytes(bytes, "folded.onnx");
    return ::testing::internal::GetCapturedStderr();
  };
  const std::string folded = warning("pytorch", 18);
  EXPECT_NE(folded.find("warning: ONNX model 'folded.onnx' has convolutions and no BatchNormalization"),
            std::string::npos)
      << folded;
  EXPECT_NE(folded.find("optimize=False"), std::string::npos) << folded;
  EXPECT_EQ(warning("pytorch", 17), "");
  EXPECT_EQ(warning("another", 18), "");
}
#endif

}  // namespace
}  // namespace engine::layers
