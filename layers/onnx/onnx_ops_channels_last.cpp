// Channels-last regions, as PyTorch writes convnext's LayerNorm2d and CNBlock: Transpose perm [0, 2, 3, 1]
// of an activation [N, C, H, W], ops on the last axis, Transpose perm [0, 3, 1, 2] back. The engine keeps
// the activation [N, C, H, W] throughout (the Transpose is a relabelling, no copy) and maps each op of the
// region onto its channel form:
//   LayerNormalization over the last axis        -> ChannelLayerNorm (weight, bias: the file's names)
//   MatMul by Transpose(W [out, in], perm [1, 0]) or by a constant [in, out], then Add of a constant [out]
//                                                -> ChannelLinear (nn.Linear's weight [out, in] and bias)
//   GELU (its Erf form), Relu, Identity, Add of two values of the region, scalar arithmetic -> as outside
// Anything else reading a value of the region is refused, naming the node: its axes would not be the
// file's.
#include <algorithm>
#include <vector>

#include "core/error.h"
#include "layers/channel_layernorm.h"
#include "layers/channel_linear.h"
#include "layers/onnx/onnx_attrs.h"
#include "layers/onnx/onnx_builder.h"

namespace engine::layers::onnx::detail {

namespace {

bool runtime_input(const Builder& b, const pb::NodeProto& node, int i) {
  return b.has_input(node, i) && b.has(node.input(i)) && !b.value_of(node.input(i)).constant;
}

bool reads_channels_last(const Builder& b, const pb::NodeProto& node) {
  for (int i = 0; i < node.input_size(); ++i) {
    if (runtime_input(b, node, i) && b.value_of(node.input(i)).channels_last) return true;
  }
  return false;
}

// The node's output, where an op converted as outside the region (a Binary of two values) defined it
// without the flag.
void keep_channels_last(Builder& b, const pb::NodeProto& node) {
  if (node.output_size() == 0 || !b.has(node.output(0))) return;
  Value v = b.value_of(node.output(0));
  if (v.constant || v.channels_last) return;
  v.channels_last = true;
  b.define(node.output(0), std::move(v));
}

void define_as(Builder& b, const std::string& output, const std::string& input, bool channels_last) {
  Value v = b.value_of(input);
  v.channels_last = channels_last;
  b.define(output, std::move(v));
}

// The node (in the reachable graph) whose first output is `name`, or null.
const pb::NodeProto* producer(const Builder& b, const std::string& name) {
  for (const auto& [input, readers] : b.consumers) {
    for (const pb::NodeProto* n : readers) {
      if (n->output_size() > 0 && n->output(0) == name) return n;
    }
  }
  return nullptr;
}

void layernorm(Builder& b, const pb::NodeProto& node) {
  for (const pb::AttributeProto& a : node.attribute()) {
    if (a.name() != "axis" && a.name() != "epsilon" && a.name() != "stash_type")
      b.refuse(node, fmt::format("attribute '{}' is not supported", a.name()));
  }
  const Value& x = b.runtime(node, 0);
  const pb::AttributeProto* axis = node_attr(node, "axis");
  const std::int64_t rank = static_cast<std::int64_t>(x.shape.size());
  if (axis != nullptr && axis->i() != -1 && axis->i() != rank - 1) {
    b.refuse(node,
             fmt::format("attribute axis = {} is not supported after Transpose perm [0, 2, 3, 1] (the last "
                         "axis, the channels, only)",
                         axis->i()));
  }
  if (const pb::AttributeProto* s = node_attr(node, "stash_type"); s != nullptr && s->i() != 1)
    b.refuse(node, fmt::format("attribute stash_type = {} is not supported (1: float)", s->i()));
  for (int i = 1; i < node.output_size(); ++i) {
    if (!node.output(i).empty() && b.consumers.count(node.output(i)) > 0)
      b.refuse(node,
               fmt::format("its output {} '{}' (mean or inverse deviation) is read by another node; only "
                           "the first output is supported",
                           i, node.output(i)));
  }
  if (!b.has_input(node, 2)) b.refuse(node, "a LayerNormalization without a bias (input B) is not supported");
  const HostTensor& scale = b.weight(node, 1);
  const HostTensor& bias = b.weight(node, 2);
  const std::int64_t c = x.shape.at(1);
  for (const auto* t : {&scale, &bias}) {
    if (t->shape != Shape{c}) {
      b.refuse(node, fmt::format("scale and bias must be [{}] (one value per channel); got {} and {}", c,
                                 shape_str(scale.shape), shape_str(bias.shape)));
    }
  }
  const pb::AttributeProto* eps = node_attr(node, "epsilon");
  auto layer =
      std::make_unique<ChannelLayerNorm>(static_cast<int>(c), eps ? static_cast<double>(eps->f()) : 1e-5);
  b.add_layer(node, std::move(layer), node.input(0), {{"weight", node.input(1)}, {"bias", node.input(2)}},
              {scale, bias}, node.output(0));
}

void matmul(Builder& b, const pb::NodeProto& node) {
  if (node.attribute_size() > 0)
    b.refuse(node, fmt::format("attribute '{}' is not supported", node.attribute(0).name()));
  const Value& x = b.runtime(node, 0);
  if (!b.has_input(node, 1) || !b.has(node.input(1)) || !b.value(node, 1).constant)
    b.refuse(node, "a MatMul of two activations is not supported (the second operand must be a weight)");
  // The weight as nn.Linear keeps it, [out, in], under its own name: PyTorch writes x @ W.T as a MatMul by
  // Transpose(W, perm [1, 0]), which the import folded to a constant; the file's W is claimed instead.
  std::string wname = node.input(1);
  HostTensor w;
  const pb::NodeProto* t = producer(b, node.input(1));
  if (t != nullptr && t->op_type() == "Transpose" &&
      node_ints(*t, "perm") == std::vector<std::int64_t>{1, 0} && b.has(t->input(0)) &&
      b.value_of(t->input(0)).constant && !b.value_of(t->input(0)).computed) {
    wname = t->input(0);
    w = b.weight(*t, 0);
  } else {
    const HostTensor& wt = b.weight(node, 1);  // [in, out]
    if (wt.shape.size() != 2)
      b.refuse(node, fmt::format("weight '{}' {} is not 2-d", node.input(1), shape_str(wt.shape)));
    const std::int64_t in = wt.shape[0], out = wt.shape[1];
    w.shape = {out, in};
    w.values.resize(wt.values.size());
    for (std::int64_t i = 0; i < in; ++i)
      for (std::int64_t o = 0; o < out; ++o)
        w.values[static_cast<std::size_t>(o * in + i)] = wt.values[static_cast<std::size_t>(i * out + o)];
  }
  if (w.shape.size() != 2 || w.shape[1] != x.shape.at(1)) {
    b.refuse(node, fmt::format("weight '{}' {} does not take the {} channels of its input", wname,
                               shape_str(w.shape), x.shape.at(1)));
  }
  const std::int64_t out = w.shape[0];
  std::vector<std::pair<std::string, std::string>> params{{"weight", wname}};
  std::vector<HostTensor> values{w};
  std::string output = node.output(0);
  const auto it = b.consumers.find(node.output(0));
  if (it != b.consumers.end() && it->second.size() == 1 && it->second[0]->op_type() == "Add") {
    const pb::NodeProto& add = *it->second[0];
    const int other = add.input(0) == node.output(0) ? 1 : 0;
    if (b.has_input(add, other) && b.has(add.input(other)) && b.value(add, other).constant &&
        b.value(add, other).data.values.size() == static_cast<std::size_t>(out) &&
        b.value(add, other).data.shape.size() == 1) {
      b.consumed.insert(&add);
      params.emplace_back("bias", add.input(other));
      values.push_back(b.weight(add, other));
      output = add.output(0);
    }
  }
  auto layer =
      std::make_unique<ChannelLinear>(static_cast<int>(w.shape[1]), static_cast<int>(out), params.size() > 1);
  b.add_layer(node, std::move(layer), node.input(0), params, values, output);
}

// The ops that act on each element alike, run as outside the region: every activation operand of the region
// and of one shape, every constant a scalar.
void check_elementwise(const Builder& b, const pb::NodeProto& node) {
  Shape shape;
  for (int i = 0; i < node.input_size(); ++i) {
    if (!b.has_input(node, i) || !b.has(node.input(i))) continue;
    const Value& v = b.value_of(node.input(i));
    if (v.constant) {
      if (v.data.values.size() != 1) {
        b.refuse(node, fmt::format(
                           "input {} '{}' {} is not a scalar: after Transpose perm [0, 2, 3, 1] only scalar "
                           "constants are supported (the axes are not the engine's)",
                           i, node.input(i), shape_str(v.data.shape)));
      }
      continue;
    }
    if (!v.channels_last || (!shape.empty() && v.shape != shape)) {
      b.refuse(node,
               fmt::format("input {} '{}' mixes a value of a channels-last region (after Transpose perm [0, "
                           "2, 3, 1]) with one outside it or of another shape",
                           i, node.input(i)));
    }
    shape = v.shape;
  }
}

}  // namespace

bool convert_channels_last(Builder& b, const pb::NodeProto& node) {
  if (b.delegated == &node) return false;
  const std::string& op = node.op_type();
  if (op == "Transpose" && runtime_input(b, node, 0)) {
    const Value& x = b.value_of(node.input(0));
    const std::vector<std::int64_t> perm = node_ints(node, "perm");
    if (!x.channels_last && x.shape.size() == 4 && perm == std::vector<std::int64_t>{0, 2, 3, 1}) {
      define_as(b, node.output(0), node.input(0), true);
      return true;
    }
    if (x.channels_last && perm == std::vector<std::int64_t>{0, 3, 1, 2}) {
      define_as(b, node.output(0), node.input(0), false);
      return true;
    }
    if (x.channels_last) {
      b.refuse(node,
               fmt::format("perm [{}] of a value in channels-last order is not supported (only [0, 3, 1, 2], "
                           "back to [N, C, H, W])",
                           fmt::join(perm, ", ")));
    }
    return false;
  }
  if (!reads_channels_last(b, node)) return false;
  if (op == "LayerNormalization") {
    layernorm(b, node);
    return true;
  }
  if (op == "MatMul") {
    matmul(b, node);
    return true;
  }
  static const std::vector<std::string> elementwise{"Add", "Sub", "Mul", "Div", "Gelu", "Relu", "Identity"};
  if (std::find(elementwise.begin(), elementwise.end(), op) != elementwise.end()) {
    check_elementwise(b, node);
    b.delegated = &node;
    convert_node(b, node);  // as outside the region (add_layer keeps the flag of its input)
    b.delegated = nullptr;
    keep_channels_last(b, node);
    return true;
  }
  b.refuse(
      node,
      fmt::format(
          "it reads '{}' in channels-last order (after a Transpose perm [0, 2, 3, 1]), where the engine "
          "supports LayerNormalization over the last axis, MatMul by a weight (+ Add of a bias), GELU, "
          "Relu, Add of two such values and scalar arithmetic, up to the Transpose perm [0, 3, 1, 2] back",
          node.input(0)));
}

}  // namespace engine::layers::onnx::detail
