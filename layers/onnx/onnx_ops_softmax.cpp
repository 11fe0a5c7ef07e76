// Softmax as a classifier has it: over the classes of [N, classes] (opset 13+: axis default -1; before 13
// axis default 1, the input coerced to 2-d from it, which on [N, classes] is the same softmax). Any other
// axis or rank is refused naming the node. The layer (layers/softmax.h) is written back as Softmax, axis 1.
#include "core/error.h"
#include "layers/onnx/onnx_activation.h"
#include "layers/onnx/onnx_attrs.h"
#include "layers/softmax.h"

namespace engine::layers::onnx::detail {

bool convert_softmax(Builder& b, const pb::NodeProto& node) {
  if (node.op_type() != "Softmax") return false;
  for (const pb::AttributeProto& a : node.attribute()) {
    if (a.name() != "axis") b.refuse(node, fmt::format("attribute '{}' is not supported", a.name()));
  }
  const pb::AttributeProto* axis_attr = node_attr(node, "axis");
  if (axis_attr != nullptr && axis_attr->type() != pb::AttributeProto::INT)
    b.refuse(node, "attribute axis is not an integer");
  const std::int64_t axis = axis_attr != nullptr ? axis_attr->i() : (b.opset() >= 13 ? -1 : 1);
  const Value& x = b.runtime(node, 0);
  const auto rank = static_cast<std::int64_t>(x.shape.size());
  if (rank != 2) {
    b.refuse(node,
             fmt::format("input '{}' {} is not supported: only 2-d [N, classes] (a classifier's softmax "
                         "over the classes)",
                         node.input(0), shape_str(x.shape)));
  }
  if (axis != 1 && axis != -1) {
    b.refuse(node, fmt::format("attribute axis = {} is not supported on [N, classes] (1 or -1: over the "
                               "classes)",
                               axis));
  }
  b.add_layer(node, std::make_unique<Softmax>(), node.input(0), {}, {}, node.output(0));
  return true;
}

std::string export_softmax(const Softmax& /*layer*/, const std::string& p, const std::string& x,
                           const ExportGraph& g) {
  pb::NodeProto& n = g.node("Softmax", p, {x});
  pb::AttributeProto* a = n.add_attribute();
  a->set_name("axis");
  a->set_type(pb::AttributeProto::INT);
  a->set_i(1);
  return n.output(0);
}

}  // namespace engine::layers::onnx::detail
