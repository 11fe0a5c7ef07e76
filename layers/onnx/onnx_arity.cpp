// How many inputs each op the importer reads must have (ONNX's schemas, opsets 9-20): checked for every node
// the output depends on before any is converted, so no conversion, and no pattern that looks ahead at a
// consumer (GELU's Erf form, SiLU's Mul, a MatMul's bias Add), reads an input the file does not have.
// tests/fuzz/fuzz_onnx found two such reads (a Reshape without its shape, a Mul without inputs).

#include <string_view>
#include <unordered_map>

#include "layers/onnx/onnx_builder.h"

namespace engine::layers::onnx::detail {
namespace {

// The inputs an op requires (ONNX's optional inputs come after them). Ops not listed need at least one, bar
// Constant (none); an op the engine does not read is refused by name later, whatever its inputs.
int required_inputs(std::string_view op) {
  static const std::unordered_map<std::string_view, int> kRequired{{"Constant", 0},
                                                                   {"Add", 2},
                                                                   {"Sub", 2},
                                                                   {"Mul", 2},
                                                                   {"Div", 2},
                                                                   {"MatMul", 2},
                                                                   {"Gemm", 2},
                                                                   {"Conv", 2},
                                                                   {"Reshape", 2},
                                                                   {"Gather", 2},
                                                                   {"Expand", 2},
                                                                   {"CastLike", 2},
                                                                   {"Slice", 3},
                                                                   {"BatchNormalization", 5},
                                                                   {"LayerNormalization", 2},
                                                                   {"ConstantOfShape", 1}};
  const auto it = kRequired.find(op);
  return it == kRequired.end() ? 1 : it->second;
}

}  // namespace

void check_arity(const Builder& b, const pb::NodeProto& node) {
  const int required = required_inputs(node.op_type());
  if (node.input_size() < required) {
    // Before opset 10 a Slice's starts and ends were attributes; the importer reads them as inputs only.
    const bool old_slice = node.op_type() == "Slice" && b.opset() < 10;
    b.refuse(node, fmt::format("it has {} input{} where {} takes at least {}{}", node.input_size(),
                               node.input_size() == 1 ? "" : "s", node.op_type(), required,
                               old_slice ? " (opset 9's starts and ends as attributes are not read)" : ""));
  }
  for (int i = 0; i < required; ++i) {
    if (node.input(i).empty()) b.refuse(node, fmt::format("its required input {} is empty", i));
  }
  if (node.output_size() == 0 || node.output(0).empty()) b.refuse(node, "it has no output");
}

}  // namespace engine::layers::onnx::detail
