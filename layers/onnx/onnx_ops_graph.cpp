// The ONNX ops that need the Graph's several-input nodes or move channels: Concat, Split and Slice on the
// channel axis, Add/Sub/Mul/Div of two activations (or of an activation and a constant that is neither a
// scalar nor per channel) with broadcasting, ReduceMean over the spatial axes, GlobalAveragePool keeping
// [N, C, 1, 1], ShuffleNet's channel shuffle (Reshape to [N, g, C/g, ...], Transpose of the two group axes,
// Reshape back) as one layer, Cast to float and Squeeze of [N, C, 1, 1] to [N, C]; and, first, the
// shape-only subgraphs folded to constants (onnx_shape_fold.cpp).
#include <algorithm>
#include <limits>

#include "core/error.h"
#include "layers/channel_ops.h"
#include "layers/flatten.h"
#include "layers/global_avgpool.h"
#include "layers/graph_ops.h"
#include "layers/onnx/onnx_attrs.h"
#include "layers/onnx/onnx_builder.h"

namespace engine::layers::onnx::detail {

bool fold_constant(Builder& b, const pb::NodeProto& node);  // onnx_shape_fold.cpp
Shape reshape_target(const Builder& b, const pb::NodeProto& node, const Shape& in, const HostTensor& shape);

void Builder::add_op(const pb::NodeProto& node, std::unique_ptr<GraphOp> op,
                     const std::vector<std::string>& inputs, const std::vector<std::string>& outputs) {
  std::vector<Shape> shapes;
  for (const std::string& in : inputs) {
    const Value& v = values_.at(in);
    shapes.push_back(v.constant ? v.data.shape : v.shape);
  }
  std::vector<Shape> out;
  try {
    out = op->output_shapes(shapes);
  } catch (const Error& e) {
    refuse(node, fmt::format("its inputs do not fit: {}", e.what()));
  }
  std::vector<int> ids;
  for (const std::string& in : inputs) ids.push_back(graph_value(node, in));
  const std::vector<int> made =
      graph_->add_op(node.name().empty() ? outputs.at(0) : node.name(), std::move(op), ids);
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    if (!outputs[i].empty()) values_[outputs[i]] = Value{made[i], false, {}, out[i]};
  }
}

namespace {

// The single reader of `name`, when it has op type `op`.
const pb::NodeProto* sole_reader(const Builder& b, const std::string& name, const char* op) {
  const auto it = b.consumers.find(name);
  if (it == b.consumers.end() || it->second.size() != 1 || it->second[0]->op_type() != op) return nullptr;
  return it->second[0];
}

// Folds the producers of `name` (a shape computed from the input's shape, written after the node that needs
// it) now; false when it is not a constant.
bool fold_now(Builder& b, const std::string& name, int depth = 0) {
  if (b.has(name)) return b.value_of(name).constant;
  if (depth > 64) return false;
  for (const auto& [tensor, readers] : b.consumers) {
    for (const pb::NodeProto* n : readers) {
      if (std::find(n->output().begin(), n->output().end(), name) == n->output().end()) continue;
      for (const std::string& in : n->input()) {
        if (!in.empty() && !b.has(in) && !fold_now(b, in, depth + 1)) return false;
      }
      return fold_constant(b, *n) && b.has(name) && b.value_of(name).constant;
    }
  }
  return false;
}

std::int64_t channel_axis(const Builder& b, const pb::NodeProto& node, std::int64_t rank) {
  std::int64_t axis = node_int(node, "axis", node.op_type() == "Concat" ? 1 : 0);
  axis = axis < 0 ? axis + rank : axis;
  if (axis != 1) {
    b.refuse(node,
             fmt::format("attribute axis = {} is not supported on a rank-{} activation (the channel axis 1 "
                         "only)",
                         node_int(node, "axis", 0), rank));
  }
  return axis;
}

void concat(Builder& b, const pb::NodeProto& node) {
  std::vector<std::string> inputs;
  std::int64_t rank = -1;
  for (int i = 0; i < node.input_size(); ++i) {
    const Value& v = b.value(node, i);
    if (!v.constant) rank = static_cast<std::int64_t>(v.shape.size());
    inputs.push_back(node.input(i));
  }
  channel_axis(b, node, rank);
  b.add_op(node, std::make_unique<Concat>(), inputs, {node.output(0)});
}

void split(Builder& b, const pb::NodeProto& node) {
  const Value& x = b.runtime(node, 0);
  channel_axis(b, node, static_cast<std::int64_t>(x.shape.size()));
  std::vector<std::int64_t> sizes = node_ints(node, "split");
  if (b.has_input(node, 1)) {
    for (const double v : b.constant(node, 1).values) sizes.push_back(static_cast<std::int64_t>(v));
  }
  const std::int64_t c = x.shape[1];
  const auto parts = static_cast<std::int64_t>(node.output_size());
  if (sizes.empty()) {  // equal parts (the last smaller, opset 18's num_outputs)
    const std::int64_t each = (c + parts - 1) / parts;
    for (std::int64_t i = 0; i < parts; ++i) sizes.push_back(std::min(each, c - i * each));
  }
  if (static_cast<std::int64_t>(sizes.size()) != parts)
    b.refuse(node, fmt::format("{} sizes for {} outputs", sizes.size(), parts));
  std::vector<std::string> outputs(node.output().begin(), node.output().end());
  b.add_op(node, std::make_unique<Split>(sizes), {node.input(0)}, outputs);
}

// SplitToSequence on channels read only by SequenceAt at constant positions (x.chunk and x.split as PyTorch's
// newer exporter writes them): a Split whose outputs are the SequenceAt nodes' outputs.
void split_to_sequence(Builder& b, const pb::NodeProto& node) {
  const Value& x = b.runtime(node, 0);
  channel_axis(b, node, static_cast<std::int64_t>(x.shape.size()));
  if (node_int(node, "keepdims", 1) != 1) b.refuse(node, "attribute keepdims = 0 is not supported");
  const std::int64_t c = x.shape[1];
  std::vector<std::int64_t> sizes;
  const HostTensor* split = b.has_input(node, 1) ? &b.constant(node, 1) : nullptr;
  if (split != nullptr && split->values.empty()) b.refuse(node, "its split input holds no value");
  if (split == nullptr || split->shape.empty()) {  // parts of one size (the last smaller), 1 by default
    const auto each = split == nullptr ? std::int64_t{1} : static_cast<std::int64_t>(split->values[0]);
    if (each < 1) b.refuse(node, fmt::format("a split size of {}", each));
    for (std::int64_t at = 0; at < c; at += each) sizes.push_back(std::min(each, c - at));
  } else {
    for (const double v : split->values) sizes.push_back(static_cast<std::int64_t>(v));
  }
  const auto parts = static_cast<std::int64_t>(sizes.size());
  std::vector<std::string> outputs(sizes.size());
  std::vector<std::pair<std::string, std::string>> repeats;  // a second SequenceAt of one part: an alias
  for (const pb::NodeProto* r : b.consumers[node.output(0)]) {
    if (r->op_type() != "SequenceAt")
      b.refuse(node, fmt::format("its sequence is read by {} '{}': only SequenceAt is supported",
                                 r->op_type(), r->name()));
    const HostTensor& position = b.constant(*r, 1);
    if (position.values.size() != 1) b.refuse(*r, "its position is not one value");
    auto at = static_cast<std::int64_t>(position.values[0]);
    at = at < 0 ? at + parts : at;
    if (at < 0 || at >= parts) b.refuse(*r, fmt::format("position {} of {} parts", at, parts));
    std::string& slot = outputs[static_cast<std::size_t>(at)];
    if (slot.empty()) {
      slot = r->output(0);
    } else {
      repeats.emplace_back(r->output(0), slot);
    }
    b.consumed.insert(r);
  }
  b.add_op(node, std::make_unique<Split>(sizes), {node.input(0)}, outputs);
  for (const auto& [alias, part] : repeats) b.alias(alias, part);
}

// Slice of a channel range with step 1 (other axes whole): ChannelSlice, or the identity.
void slice(Builder& b, const pb::NodeProto& node) {
  const Value& x = b.runtime(node, 0);
  const auto rank = static_cast<std::int64_t>(x.shape.size());
  auto ints = [&](int i) {
    std::vector<std::int64_t> v;
    if (b.has_input(node, i)) {
      for (const double d : b.constant(node, i).values)
        v.push_back(d >= 9.2e18    ? std::numeric_limits<std::int64_t>::max()
                    : d <= -9.2e18 ? std::numeric_limits<std::int64_t>::min()
                                   : static_cast<std::int64_t>(d));
    }
    return v;
  };
  const std::vector<std::int64_t> starts = ints(1), ends = ints(2);
  std::vector<std::int64_t> axes = ints(3), steps = ints(4);
  if (axes.empty()) {
    for (std::size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<std::int64_t>(i));
  }
  if (steps.empty()) steps.assign(starts.size(), 1);
  std::int64_t begin = 0, end = x.shape[1];
  for (std::size_t i = 0; i < axes.size(); ++i) {
    const std::int64_t a = axes[i] < 0 ? axes[i] + rank : axes[i];
    if (a < 0 || a >= rank) b.refuse(node, fmt::format("axis {} of a rank-{} input", axes[i], rank));
    const std::int64_t n = x.shape[static_cast<std::size_t>(a)];
    const std::int64_t lo = std::clamp<std::int64_t>(starts[i] < 0 ? starts[i] + n : starts[i], 0, n);
    const std::int64_t hi = std::clamp<std::int64_t>(ends[i] < 0 ? ends[i] + n : ends[i], 0, n);
    const bool whole = lo == 0 && hi == n && steps[i] == 1;
    if (a == 1 && steps[i] == 1 && hi > lo) {
      begin = lo;
      end = hi;
    } else if (!whole) {
      b.refuse(node,
               fmt::format("slices axis {} [{}, {}) step {} of {}: only a channel range (axis 1, step 1) "
                           "is supported",
                           a, lo, hi, steps[i], shape_str(x.shape)));
    }
  }
  if (begin == 0 && end == x.shape[1]) return b.alias(node.output(0), node.input(0));
  b.add_layer(node, std::make_unique<ChannelSlice>(begin, end), node.input(0), {}, {}, node.output(0));
}

void reduce_mean(Builder& b, const pb::NodeProto& node) {
  const Value& x = b.runtime(node, 0);
  std::vector<std::int64_t> axes = node_ints(node, "axes");
  if (b.has_input(node, 1)) {
    for (const double v : b.constant(node, 1).values) axes.push_back(static_cast<std::int64_t>(v));
  }
  for (std::int64_t& a : axes) a = a < 0 ? a + static_cast<std::int64_t>(x.shape.size()) : a;
  std::sort(axes.begin(), axes.end());
  if (x.shape.size() != 4 || axes != std::vector<std::int64_t>{2, 3} ||
      node_int(node, "noop_with_empty_axes", 0) != 0) {
    b.refuse(node,
             fmt::format("axes [{}] of {} are not supported (the spatial axes [2, 3] of [N, C, H, W] only)",
                         fmt::join(axes, ", "), shape_str(x.shape)));
  }
  b.add_layer(node, std::make_unique<GlobalAvgPool>(node_int(node, "keepdims", 1) != 0), node.input(0), {},
              {}, node.output(0));
}

// ShuffleNet's channel shuffle from its first Reshape; false when the three nodes are not that pattern.
bool channel_shuffle(Builder& b, const pb::NodeProto& r1, const Shape& x, const Shape& grouped) {
  if (x.size() < 3 || grouped.size() < 4 || grouped[0] != x[0] || grouped[1] * grouped[2] != x[1])
    return false;
  const pb::NodeProto* t = sole_reader(b, r1.output(0), "Transpose");
  if (t == nullptr) return false;
  const std::vector<std::int64_t> perm = node_ints(*t, "perm");
  for (std::size_t i = 0; i < perm.size(); ++i) {
    const auto want = static_cast<std::int64_t>(i == 1 ? 2 : i == 2 ? 1 : i);
    if (perm.size() != grouped.size() || perm[i] != want) return false;
  }
  // PyTorch's newer exporter writes the .contiguous() between the two as an Identity ("clone").
  std::vector<const pb::NodeProto*> copies;
  const pb::NodeProto* last = t;
  while (const pb::NodeProto* copy = sole_reader(b, last->output(0), "Identity"))
    last = copies.emplace_back(copy);
  const pb::NodeProto* r2 = sole_reader(b, last->output(0), "Reshape");
  if (r2 == nullptr || r2->input_size() < 2 || !fold_now(b, r2->input(1))) return false;
  Shape swapped = grouped;
  std::swap(swapped[1], swapped[2]);
  if (reshape_target(b, *r2, swapped, b.value(*r2, 1).data) != x) return false;
  b.consumed.insert(t);
  b.consumed.insert(copies.begin(), copies.end());
  b.consumed.insert(r2);
  b.add_layer(r1, std::make_unique<ChannelShuffle>(grouped[1], x[1]), r1.input(0), {}, {}, r2->output(0));
  return true;
}

// Reshape of an activation: the identity, a channel shuffle, or (false) left to onnx_ops.cpp's flatten.
bool reshape(Builder& b, const pb::NodeProto& node) {
  const Value& x = b.runtime(node, 0);
  if (!b.has_input(node, 1) || !b.value(node, 1).constant) return false;
  const Shape target = reshape_target(b, node, x.shape, b.constant(node, 1));
  if (target == x.shape) {
    b.alias(node.output(0), node.input(0));
    return true;
  }
  if (channel_shuffle(b, node, x.shape, target)) return true;
  if (target.size() == 2 && target[0] == x.shape[0]) return false;
  b.refuse(node,
           fmt::format("reshapes {} to {}: only [N, -1] (flatten), the identity and ShuffleNet's channel "
                       "shuffle (Reshape, Transpose, Reshape) are supported",
                       shape_str(x.shape), shape_str(target)));
}

bool binary(Builder& b, const pb::NodeProto& node) {
  if (node.input_size() != 2 || node.attribute_size() > 0) return false;
  const std::string& op = node.op_type();
  const Value& l = b.value(node, 0);
  const Value& r = b.value(node, 1);
  if (l.constant && r.constant) return false;
  const Value& c = l.constant ? l : r;
  if (op == "Add" && !l.constant && !r.constant && l.shape == r.shape) return false;  // a sum
  if (l.constant || r.constant) {
    // A constant operand: a scalar (x - 1, 1 / x) is a fixed value, as PyTorch writes a Python number; one
    // per channel is onnx_ops_elementwise.cpp's trainable ChannelAffine. Any other shape may be a parameter
    // of the module (an initializer) that a fixed constant would silently stop training: Add and Mul leave it
    // to onnx_ops_elementwise.cpp, which refuses it naming the shapes; Sub and Div refuse it here.
    if (c.data.values.size() != 1) {
      if (op == "Add" || op == "Mul") return false;
      b.refuse(node, fmt::format("a constant operand '{}' {}: only a scalar constant or a run-time value is "
                                 "supported (a constant of another shape would not train)",
                                 l.constant ? node.input(0) : node.input(1), shape_str(c.data.shape)));
    }
    if (op == "Add" || op == "Mul") return false;  // the scalar paths of onnx_ops_elementwise.cpp
    if (op == "Div" && r.constant) return false;   // Mul by 1 / c
  }
  if (b.integer_input && op != "Add") {
    b.refuse(node,
             "the graph's input holds integers: the engine computes in float, where integer Sub, Mul and "
             "Div would wrap or truncate");
  }
  const BinaryOp bop = op == "Add"   ? BinaryOp::Add
                       : op == "Sub" ? BinaryOp::Sub
                       : op == "Mul" ? BinaryOp::Mul
                                     : BinaryOp::Div;
  b.add_op(node, std::make_unique<Binary>(bop), {node.input(0), node.input(1)}, {node.output(0)});
  return true;
}

}  // namespace

bool convert_graph_node(Builder& b, const pb::NodeProto& node) {
  if (node.op_type() != "Constant" && fold_constant(b, node)) return true;
  const std::string& op = node.op_type();
  if (op == "Concat") return concat(b, node), true;
  if (op == "Split") return split(b, node), true;
  if (op == "SplitToSequence") return split_to_sequence(b, node), true;
  if (op == "Slice") return slice(b, node), true;
  if (op == "ReduceMean") return reduce_mean(b, node), true;
  if (op == "GlobalAveragePool") {
    if (node.attribute_size() > 0)
      b.refuse(node, fmt::format("attribute '{}' is not supported", node.attribute(0).name()));
    b.runtime(node, 0);
    b.add_layer(node, std::make_unique<GlobalAvgPool>(true), node.input(0), {}, {}, node.output(0));
    return true;
  }
  if (op == "Reshape") return reshape(b, node);
  if (op == "Cast" || op == "CastLike") {
    const std::int64_t to = node_int(node, "to", 1);
    b.runtime(node, 0);
    if (op == "Cast" && to != 1)
      b.refuse(node, fmt::format("attribute to = {} is not supported on an activation (float only)", to));
    b.alias(node.output(0), node.input(0));
    return true;
  }
  if (op == "Squeeze") {
    const Value& x = b.runtime(node, 0);
    if (x.shape.size() == 4 && x.shape[2] == 1 && x.shape[3] == 1) {
      b.add_layer(node, std::make_unique<Flatten>(), node.input(0), {}, {}, node.output(0));
      return true;
    }
    b.refuse(node, fmt::format("squeezes {}: only [N, C, 1, 1] to [N, C] is supported", shape_str(x.shape)));
  }
  if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div") return binary(b, node);
  if (op == "Gather" || op == "Unsqueeze" || op == "Expand" || op == "Transpose") {
    b.refuse(node,
             fmt::format("{} of a run-time activation is not supported: the engine folds it on shapes and "
                         "constants at import (and Transpose inside ShuffleNet's channel shuffle)",
                         op));
  }
  return false;
}

}  // namespace engine::layers::onnx::detail
