#include "layers/onnx/onnx_builder.h"

#include <algorithm>

#include "core/error.h"

namespace engine::layers::onnx::detail {

std::string Builder::where(const pb::NodeProto& node) const {
  return fmt::format("ONNX model '{}': node '{}' ({})", what_, node.name(), node.op_type());
}

void Builder::refuse(const pb::NodeProto& node, const std::string& message) const {
  ENGINE_FAIL("{}: {}", where(node), message);
}

bool Builder::has_input(const pb::NodeProto& node, int input) const {
  return input < node.input_size() && !node.input(input).empty();
}

const Value& Builder::value(const pb::NodeProto& node, int input) const {
  if (!has_input(node, input)) refuse(node, fmt::format("input {} is missing", input));
  const auto it = values_.find(node.input(input));
  if (it == values_.end())
    refuse(node, fmt::format("input '{}' is made by no node (a bug)", node.input(input)));
  return it->second;
}

const Value& Builder::runtime(const pb::NodeProto& node, int input) const {
  const Value& v = value(node, input);
  if (v.constant) {
    refuse(node, fmt::format("input {} '{}' is a constant; the engine runs this op on activations only",
                             input, node.input(input)));
  }
  return v;
}

const HostTensor& Builder::constant(const pb::NodeProto& node, int input) const {
  const Value& v = value(node, input);
  if (!v.constant) {
    refuse(node, fmt::format("input {} '{}' is computed at run time; the engine needs a constant (an "
                             "initializer) there",
                             input, node.input(input)));
  }
  return v.data;
}

const HostTensor& Builder::weight(const pb::NodeProto& node, int input) {
  const HostTensor& t = constant(node, input);
  if (!claimed_weights_.insert(node.input(input)).second) {
    refuse(node, fmt::format("weight '{}' is also used by another node: tied weights are not supported",
                             node.input(input)));
  }
  return t;
}

bool Builder::has_bias(const pb::NodeProto& node, int input) const {
  if (!has_input(node, input) || !value(node, input).computed) return has_input(node, input);
  const HostTensor& t = constant(node, input);
  if (std::any_of(t.values.begin(), t.values.end(), [](double v) { return v != 0.0; })) {
    refuse(node, fmt::format("bias '{}' is computed at import, not a tensor of the file: a fixed non-zero "
                             "bias is not supported",
                             node.input(input)));
  }
  return false;
}

int Builder::graph_value(const pb::NodeProto& node, const std::string& name) {
  Value& v = values_.at(name);
  if (v.id < 0) {
    // A constant entering the graph as an operand (a node test's bound input): made once, kept.
    v.id = graph_->add_constant(v.data.values, v.data.shape);
    v.shape = v.data.shape;
  }
  (void)node;
  return v.id;
}

std::string Builder::child_name(const pb::NodeProto& node,
                                const std::vector<std::pair<std::string, std::string>>& params) const {
  // The common prefix of "<prefix>.<local>" over every parameter, when there is one.
  std::string prefix;
  bool ok = !params.empty();
  for (const auto& [local, tensor] : params) {
    const std::string tail = "." + local;
    if (tensor.size() <= tail.size() || tensor.compare(tensor.size() - tail.size(), tail.size(), tail) != 0) {
      ok = false;
      break;
    }
    const std::string p = tensor.substr(0, tensor.size() - tail.size());
    if (prefix.empty()) prefix = p;
    ok = ok && p == prefix;
  }
  if (ok && child_names_.count(prefix) == 0) return prefix;
  std::string name = node.name().empty() ? fmt::format("{}_{}", node.op_type(), unnamed_) : node.name();
  // A state-dict path component may not be empty; a node name that clashes gets a suffix.
  for (int k = 1; child_names_.count(name) > 0; ++k) name = fmt::format("{}_{}", node.name(), k);
  return name;
}

void Builder::add_layer(const pb::NodeProto& node, std::unique_ptr<Layer> layer,
                        const std::string& input_name,
                        const std::vector<std::pair<std::string, std::string>>& params,
                        const std::vector<HostTensor>& values, const std::string& output) {
  for (std::size_t i = 0; i < params.size(); ++i) {
    const std::string& local = params[i].first;
    for (const ParamSlot& slot : layer->parameter_slots()) {
      if (slot.name == local && slot.shape != values[i].shape) {
        refuse(node, fmt::format("'{}' has shape {}; the layer's {} is {}", params[i].second,
                                 shape_str(values[i].shape), local, shape_str(slot.shape)));
      }
    }
    if (fresh_weights.count(params[i].second) == 0) layer->set_initial_values(local, values[i].values);
  }
  const Value& in = values_.at(input_name);
  Shape out;
  try {
    out = layer->output_shape(in.shape);
  } catch (const Error& e) {
    refuse(node,
           fmt::format("its input '{}' {} does not fit: {}", input_name, shape_str(in.shape), e.what()));
  }
  const std::string name = child_name(node, params);
  ++unnamed_;
  child_names_.insert(name);
  const int in_id = graph_value(node, input_name);
  const int id = graph_->add_node(name, std::move(layer), in_id);
  values_[output] = Value{id, false, {}, out};
  values_[output].channels_last = in.channels_last;
}

void Builder::add_sum(const pb::NodeProto& node, const std::string& a, const std::string& b,
                      const std::string& output) {
  const Value& va = values_.at(a);
  const Value& vb = values_.at(b);
  const Shape& sa = va.constant ? va.data.shape : va.shape;
  const Shape& sb = vb.constant ? vb.data.shape : vb.shape;
  if (sa != sb) {
    refuse(node, fmt::format("adds '{}' {} and '{}' {}: the engine adds tensors of equal shapes only (no "
                             "broadcasting)",
                             a, shape_str(sa), b, shape_str(sb)));
  }
  if (va.constant && vb.constant) refuse(node, "adds two constants (fold them before export)");
  const int ia = graph_value(node, a);
  const int ib = graph_value(node, b);
  const int id = graph_->add_sum(node.name().empty() ? node.output(0) : node.name(), ia, ib);
  values_[output] = Value{id, false, {}, sa};
  values_[output].channels_last = va.channels_last || vb.channels_last;
}

}  // namespace engine::layers::onnx::detail
