// The element-wise ONNX ops: Add (a residual join, or a bound operand of equal shape), Mul and Div by a
// scalar constant, Dropout, Identity, Constant, and the Erf pattern PyTorch writes for GELU before opset 20:
//   y = Mul(Mul(x, Add(Erf(Div(x, sqrt 2)), 1)), 0.5)   -> the engine's GELU on x.
#include <cmath>

#include "core/error.h"
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

// y = x * c or x / c for a scalar constant c.
void scale(Builder& b, const pb::NodeProto& node, bool divide) {
  double c = 0;
  int x = -1;
  if (is_scalar(b, node, 1, &c))
    x = 0;
  else if (!divide && is_scalar(b, node, 0, &c))
    x = 1;
  if (x < 0) {
    b.refuse(node, fmt::format("{} is supported by a scalar constant only (an initializer or Constant of one "
                               "value); inputs here: '{}', '{}'",
                               node.op_type(), node.input(0), node.input_size() > 1 ? node.input(1) : ""));
  }
  if (divide && c == 0.0) b.refuse(node, "divides by the constant 0");
  b.runtime(node, x);
  b.add_layer(node, std::make_unique<Mul>(divide ? 1.0 / c : c), node.input(x), {}, {}, node.output(0));
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
    return b.add_sum(node, node.input(0), node.input(1), node.output(0));
  }
  if (op == "Div" && erf_gelu(b, node)) return;
  if (op == "Mul" || op == "Div") return scale(b, node, op == "Div");
  if (op == "Dropout") return dropout(b, node);
  if (op == "Identity") {
    b.value(node, 0);
    return b.alias(node.output(0), node.input(0));
  }
  if (op == "Constant") return constant(b, node);
  b.refuse(node, fmt::format("op {} is not supported; the engine trains {}", op, supported_ops()));
}

}  // namespace engine::layers::onnx::detail
