// The element-wise ONNX ops: Add (a residual join, or a bound operand of equal shape), Add and Mul by a
// constant that broadcasts per channel or as a scalar, Div by a scalar constant, Dropout, Identity,
// Constant, and the Erf pattern PyTorch writes for GELU before opset 20:
//   y = Mul(Mul(x, Add(Erf(Div(x, sqrt 2)), 1)), 0.5)   -> the engine's GELU on x.
#include <cmath>

#include "core/error.h"
#include "layers/channel_affine.h"
#include "layers/dropout.h"
#include "layers/gelu.h"
#include "layers/mul.h"
#include "layers/onnx/onnx_builder.h"

namespace engine::layers::onnx::detail {

namespace {

bool is_scalar(const Builder& b, const pb::NodeProto& node, int input, double* value) {
  if (!b.has_input(node, input) || !b.has(node.input(input)) || !b.value(node, input).constant) return false;
  const HostTensor& t = b.value(node, input).data;
  if (t.values.size() != 1) return false;
  if (value != nullptr) *value = t.values[0];
  return true;
}

bool near(double a, double b) { return std::abs(a - b) <= 1e-6 * std::abs(b); }

// The single node reading `name`, when it has op type `op` (else null).
const pb::NodeProto* only_consumer(const Builder& b, const std::string& name, const char* op) {
  const auto it = b.consumers.find(name);
  if (it == b.consumers.end() || it->second.size() != 1 || it->second[0]->op_type() != op) return nullptr;
  return it->second[0];
}

// The operand of a two-input node that is not `name` (-1 when neither or both are).
int other_input(const pb::NodeProto& node, const std::string& name) {
  if (node.input_size() != 2) return -1;
  if (node.input(0) == name && node.input(1) != name) return 1;
  if (node.input(1) == name && node.input(0) != name) return 0;
  return -1;
}

// Matches the Erf form of GELU starting at the Div; on a match adds the GELU and marks the nodes consumed.
bool erf_gelu(Builder& b, const pb::NodeProto& div) {
  double c = 0;
  if (div.input_size() != 2 || !is_scalar(b, div, 1, &c) || !near(c, std::sqrt(2.0))) return false;
  const std::string& x = div.input(0);
  const pb::NodeProto* erf = only_consumer(b, div.output(0), "Erf");
  if (erf == nullptr) return false;
  const pb::NodeProto* add = only_consumer(b, erf->output(0), "Add");
  if (add == nullptr || !is_scalar(b, *add, other_input(*add, erf->output(0)), &c) || c != 1.0) return false;
  const pb::NodeProto* mul_x = only_consumer(b, add->output(0), "Mul");
  if (mul_x == nullptr || other_input(*mul_x, add->output(0)) < 0 ||
      mul_x->input(other_input(*mul_x, add->output(0))) != x)
    return false;
  const pb::NodeProto* half = only_consumer(b, mul_x->output(0), "Mul");
  if (half == nullptr || !is_scalar(b, *half, other_input(*half, mul_x->output(0)), &c) || c != 0.5)
    return false;
  b.runtime(div, 0);
  for (const pb::NodeProto* n : {erf, add, mul_x, half}) b.consumed.insert(n);
  b.add_layer(div, std::make_unique<GELU>(), x, {}, {}, half->output(0));
  return true;
}

// How a constant operand broadcasts against the run-time operand x under ONNX's (numpy's) rules: shapes
// aligned at the LAST axis, so a [C] constant meets W of an [N, C, H, W] x, not C.
enum class Broadcast { Scalar, PerChannel, Other };

Broadcast broadcast_of(const Shape& x, const Shape& c) {
  std::int64_t n = 1;
  for (const std::int64_t d : c) n *= d;
  if (c.size() > x.size()) return Broadcast::Other;  // the output would gain axes
  if (n == 1) return Broadcast::Scalar;
  // The constant's axis that meets x's channel axis 1; every other axis of the constant must be 1.
  const std::ptrdiff_t channel = 1 - static_cast<std::ptrdiff_t>(x.size() - c.size());
  if (channel < 0 || x.size() < 2 || c[static_cast<std::size_t>(channel)] != x[1]) return Broadcast::Other;
  for (std::size_t i = 0; i < c.size(); ++i) {
    if (static_cast<std::ptrdiff_t>(i) != channel && c[i] != 1) return Broadcast::Other;
  }
  return Broadcast::PerChannel;
}

// The operand of a two-input node that is a constant beside a run-time value (-1 when there is none).
int constant_operand(const Builder& b, const pb::NodeProto& node) {
  if (node.input_size() != 2) return -1;
  for (int i = 0; i < 2; ++i) {
    if (b.has_input(node, i) && b.has(node.input(i)) && b.value(node, i).constant &&
        b.has_input(node, 1 - i) && b.has(node.input(1 - i)) && !b.value(node, 1 - i).constant)
      return i;
  }
  return -1;
}

// A constant operand of `node` as a ChannelAffine value: per channel, a trainable parameter (as every
// initializer a layer takes as its weight: PyTorch writes an nn.Parameter so), claimed by this node; a
// scalar, a fixed buffer (as Mul and Div by a scalar always were: PyTorch writes a Python number so).
// "block.gamma" is named "gamma" (the layer takes the prefix "block"); a bare name is its own.
ChannelValue channel_value(Builder& b, const pb::NodeProto& node, int ci, bool per_channel,
                           HostTensor* value) {
  const std::string& name = node.input(ci);
  const std::size_t dot = name.find_last_of('.');
  ChannelValue v{true, {}, dot == std::string::npos ? name : name.substr(dot + 1), per_channel};
  if (v.name.empty()) v.name = node.op_type() == "Mul" ? "weight" : "bias";
  *value = per_channel ? b.weight(node, ci) : HostTensor{b.constant(node, ci).values, {1}};
  v.shape = value->shape;
  return v;
}

// x * c or x + c for a constant c per channel or scalar, and x * c + d (a per-channel Mul whose only reader
// is an Add of a per-channel constant) as one layer. Returns false when no operand is such a constant beside
// a run-time value; refuses constants of other shapes, naming the node, the inputs and their shapes.
bool channel_constant(Builder& b, const pb::NodeProto& node) {
  const bool mul = node.op_type() == "Mul";
  const int ci = constant_operand(b, node);
  if (ci < 0) return false;
  const int xi = 1 - ci;
  const Value& x = b.runtime(node, xi);
  const HostTensor& c = b.constant(node, ci);
  if (!mul && c.shape == x.shape) return false;  // an operand of equal shape: a sum
  const Broadcast kind = broadcast_of(x.shape, c.shape);
  if (kind == Broadcast::Scalar && mul) {
    b.add_layer(node, std::make_unique<Mul>(c.values[0]), node.input(xi), {}, {}, node.output(0));
    return true;
  }
  if (kind == Broadcast::Other ||
      (kind == Broadcast::PerChannel && x.shape.size() != 2 && x.shape.size() != 4)) {
    b.refuse(node,
             fmt::format("input {} '{}' {} against input {} '{}' {}: only a scalar or a per-channel "
                         "constant ([C, 1, 1] or [1, C, 1, 1] on [N, C, H, W]; [C] on [N, C]) "
                         "broadcasts in the engine (ONNX aligns the last axes: a [C] constant on "
                         "[N, C, H, W] is one value per column W)",
                         ci, node.input(ci), shape_str(c.shape), xi, node.input(xi), shape_str(x.shape)));
  }
  ChannelAffineOptions o;
  std::vector<std::pair<std::string, std::string>> params;
  std::vector<HostTensor> values;
  std::vector<std::pair<std::string, std::vector<double>>> fixed;
  auto take = [&](const pb::NodeProto& n, int i, ChannelValue* slot) {
    HostTensor v;
    *slot = channel_value(b, n, i, kind == Broadcast::PerChannel, &v);
    if (slot->trainable) {
      params.emplace_back(slot->name, n.input(i));
      values.push_back(std::move(v));
    } else {
      fixed.emplace_back(slot->name, std::move(v.values));
    }
  };
  take(node, ci, mul ? &o.scale : &o.shift);
  std::string output = node.output(0);
  const pb::NodeProto* add = mul && kind == Broadcast::PerChannel ? only_consumer(b, output, "Add") : nullptr;
  const int di = add != nullptr ? other_input(*add, output) : -1;
  if (di >= 0 && b.has(add->input(di)) && b.value(*add, di).constant &&
      broadcast_of(x.shape, b.value(*add, di).data.shape) == Broadcast::PerChannel &&
      add->attribute_size() == 0) {
    take(*add, di, &o.shift);
    if (o.shift.name == o.scale.name) o.shift.name += "_shift";
    b.consumed.insert(add);
    output = add->output(0);
  }
  auto layer = std::make_unique<ChannelAffine>(o);
  for (auto& [local, v] : fixed) layer->set_initial_values(local, std::move(v));
  b.add_layer(node, std::move(layer), node.input(xi), params, values, output);
  return true;
}

// y = x / c for a scalar constant c.
void divide(Builder& b, const pb::NodeProto& node) {
  double c = 0;
  if (!is_scalar(b, node, 1, &c)) {
    b.refuse(node,
             fmt::format("Div is supported by a scalar constant only (an initializer or Constant of one "
                         "value); inputs here: '{}', '{}'",
                         node.input(0), node.input_size() > 1 ? node.input(1) : ""));
  }
  if (c == 0.0) b.refuse(node, "divides by the constant 0");
  b.runtime(node, 0);
  b.add_layer(node, std::make_unique<Mul>(1.0 / c), node.input(0), {}, {}, node.output(0));
}

void dropout(Builder& b, const pb::NodeProto& node) {
  for (const pb::AttributeProto& a : node.attribute()) {
    if (a.name() != "ratio" && a.name() != "seed" && a.name() != "is_test")
      b.refuse(node, fmt::format("attribute '{}' is not supported", a.name()));
  }
  for (int i = 1; i < node.output_size(); ++i) {
    if (!node.output(i).empty() && b.consumers.count(node.output(i)) > 0)
      b.refuse(node,
               fmt::format("its mask output '{}' is read by another node: not supported", node.output(i)));
  }
  double p = 0.5;
  for (const pb::AttributeProto& a : node.attribute()) {
    if (a.name() == "ratio") p = static_cast<double>(a.f());
  }
  if (b.has_input(node, 1)) {
    const HostTensor& r = b.constant(node, 1);
    if (r.values.size() != 1) b.refuse(node, "ratio must be a scalar");
    p = r.values[0];
  }
  // The training_mode input is the exporter's record of the mode; the engine's run decides the mode.
  b.runtime(node, 0);
  if (p < 0.0 || p >= 1.0) b.refuse(node, fmt::format("ratio {} is not supported (0 <= ratio < 1)", p));
  b.add_layer(node, std::make_unique<Dropout>(p), node.input(0), {}, {}, node.output(0));
}

void constant(Builder& b, const pb::NodeProto& node) {
  if (node.attribute_size() != 1) b.refuse(node, "expects exactly one attribute (value)");
  const pb::AttributeProto& a = node.attribute(0);
  HostTensor t;
  if (a.name() == "value") {
    t = tensor_values(a.t(), b.where(node) + ": value");
  } else if (a.name() == "value_float") {
    t = {{static_cast<double>(a.f())}, {}};
  } else if (a.name() == "value_int") {
    t = {{static_cast<double>(a.i())}, {}};
  } else if (a.name() == "value_floats") {
    t = {{a.floats().begin(), a.floats().end()}, {a.floats_size()}};
  } else if (a.name() == "value_ints") {
    for (const std::int64_t v : a.ints()) t.values.push_back(static_cast<double>(v));
    t.shape = {a.ints_size()};
  } else {
    b.refuse(node,
             fmt::format("attribute '{}' is not supported (value, value_float(s), value_int(s))", a.name()));
  }
  b.define(node.output(0), Value{-1, true, std::move(t), {}});
}

}  // namespace

void convert_elementwise(Builder& b, const pb::NodeProto& node) {
  const std::string& op = node.op_type();
  if (op == "Add") {
    if (node.attribute_size() > 0)
      b.refuse(node, fmt::format("attribute '{}' is not supported", node.attribute(0).name()));
    if (channel_constant(b, node)) return;
    return b.add_sum(node, node.input(0), node.input(1), node.output(0));
  }
  if (op == "Div" && erf_gelu(b, node)) return;
  if (op == "Div") return divide(b, node);
  if (op == "Mul") {
    if (node.attribute_size() > 0)
      b.refuse(node, fmt::format("attribute '{}' is not supported", node.attribute(0).name()));
    if (channel_constant(b, node)) return;
    b.refuse(
        node,
        fmt::format("multiplies '{}' by '{}': the engine multiplies by a constant only (a scalar or "
                    "one value per channel)",
                    node.input_size() > 0 ? node.input(0) : "", node.input_size() > 1 ? node.input(1) : ""));
  }
  if (op == "Dropout") return dropout(b, node);
  if (op == "Identity") {
    b.value(node, 0);
    return b.alias(node.output(0), node.input(0));
  }
  if (op == "Constant") return constant(b, node);
  // PyTorch exports x.view(x.size(0), -1) as Shape -> Gather -> Unsqueeze -> Concat -> Reshape.
  const std::string flatten_hint =
      op == "Shape" ? " (x.view(x.size(0), -1) or x.reshape(x.size(0), -1) exports as Shape and Gather "
                      "before its Reshape: write torch.flatten(x, 1) or nn.Flatten() in the model instead, "
                      "which exports as one Flatten)"
                    : "";
  b.refuse(node,
           fmt::format("op {} is not supported{}; the engine trains {}", op, flatten_hint, supported_ops()));
}

}  // namespace engine::layers::onnx::detail
