// The pointwise activations in ONNX: Sigmoid, Tanh, HardSigmoid, HardSwish, Clip, LeakyRelu, and SiLU, which
// ONNX has no op for before opset 22 (PyTorch writes Sigmoid then Mul of the same value; the importer fuses
// the pair into one SiLU layer, the writer splits it again).
#include <cmath>
#include <limits>

#include "core/error.h"
#include "layers/onnx/onnx_activation.h"

namespace engine::layers::onnx::detail {

namespace {

float float_attr(const Builder& b, const pb::NodeProto& node, const std::string& name, float fallback) {
  for (const pb::AttributeProto& a : node.attribute()) {
    if (a.name() != name) continue;
    if (a.type() != pb::AttributeProto::FLOAT)
      b.refuse(node, fmt::format("attribute {} is not a float", name));
    return a.f();
  }
  return fallback;
}

void only_attributes(const Builder& b, const pb::NodeProto& node, std::initializer_list<const char*> known) {
  for (const pb::AttributeProto& a : node.attribute()) {
    bool ok = false;
    for (const char* k : known) ok = ok || a.name() == k;
    if (!ok) b.refuse(node, fmt::format("attribute '{}' is not supported", a.name()));
  }
}

// Clip's bound `input` (1: min, 2: max) since opset 11: absent (or "") is unbounded; else a scalar constant.
float clip_bound(const Builder& b, const pb::NodeProto& node, int input, float unbounded) {
  if (!b.has_input(node, input)) return unbounded;
  if (!b.value(node, input).constant) {
    b.refuse(node, fmt::format("its {} '{}' is computed at run time; the engine clips by constants only",
                               input == 1 ? "min" : "max", node.input(input)));
  }
  const HostTensor& t = b.constant(node, input);
  if (t.values.size() != 1) {
    b.refuse(node, fmt::format("its {} '{}' has {} values; a scalar is expected", input == 1 ? "min" : "max",
                               node.input(input), t.values.size()));
  }
  return static_cast<float>(t.values[0]);
}

ActivationParams clip_params(const Builder& b, const pb::NodeProto& node) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  ActivationParams p{ActivationKind::Clip, -kInf, kInf};
  if (b.opset() < 11) {
    only_attributes(b, node, {"min", "max"});
    p.alpha = float_attr(b, node, "min", -kInf);
    p.beta = float_attr(b, node, "max", kInf);
  } else {
    only_attributes(b, node, {});
    p.alpha = clip_bound(b, node, 1, -kInf);
    p.beta = clip_bound(b, node, 2, kInf);
  }
  if (std::isnan(p.alpha) || std::isnan(p.beta) || p.alpha > p.beta) {
    b.refuse(node,
             fmt::format("min {} and max {} are not supported (min <= max, neither NaN)", p.alpha, p.beta));
  }
  return p;
}

// The Mul that makes Sigmoid(x) a SiLU: the Sigmoid's only reader, multiplying it by x itself.
const pb::NodeProto* silu_mul(const Builder& b, const pb::NodeProto& sigmoid) {
  const auto it = b.consumers.find(sigmoid.output(0));
  if (it == b.consumers.end() || it->second.size() != 1) return nullptr;
  const pb::NodeProto* mul = it->second[0];
  if (mul->op_type() != "Mul" || mul->input_size() != 2 || mul->attribute_size() != 0) return nullptr;
  const std::string& x = sigmoid.input(0);
  const std::string& s = sigmoid.output(0);
  const bool pair = (mul->input(0) == x && mul->input(1) == s) || (mul->input(0) == s && mul->input(1) == x);
  return pair ? mul : nullptr;
}

}  // namespace

bool convert_activation(Builder& b, const pb::NodeProto& node) {
  const std::string& op = node.op_type();
  ActivationParams p;
  std::string output = node.output_size() > 0 ? node.output(0) : "";
  if (op == "Sigmoid") {
    only_attributes(b, node, {});
    p.kind = ActivationKind::Sigmoid;
    if (const pb::NodeProto* mul = silu_mul(b, node)) {
      p.kind = ActivationKind::SiLU;
      b.consumed.insert(mul);
      output = mul->output(0);
    }
  } else if (op == "Tanh") {
    only_attributes(b, node, {});
    p.kind = ActivationKind::Tanh;
  } else if (op == "HardSigmoid") {
    only_attributes(b, node, {"alpha", "beta"});
    p = {ActivationKind::HardSigmoid, float_attr(b, node, "alpha", 0.2f), float_attr(b, node, "beta", 0.5f)};
    if (!std::isfinite(p.alpha) || !std::isfinite(p.beta)) {
      b.refuse(node, fmt::format("alpha {} and beta {} must be finite", p.alpha, p.beta));
    }
  } else if (op == "HardSwish") {
    only_attributes(b, node, {});
    p.kind = ActivationKind::HardSwish;
  } else if (op == "Clip") {
    p = clip_params(b, node);
  } else if (op == "LeakyRelu") {
    only_attributes(b, node, {"alpha"});
    p = {ActivationKind::LeakyRelu, float_attr(b, node, "alpha", 0.01f), 0.0f};
    if (!std::isfinite(p.alpha)) b.refuse(node, fmt::format("alpha {} must be finite", p.alpha));
  } else {
    return false;
  }
  b.runtime(node, 0);
  b.add_layer(node, std::make_unique<Activation>(p), node.input(0), {}, {}, output);
  return true;
}

std::string export_activation(const Activation& a, const std::string& p, const std::string& x,
                              const ExportGraph& g) {
  const ActivationParams& q = a.params();
  auto float_attr = [](pb::NodeProto& n, const char* name, float v) {
    pb::AttributeProto* at = n.add_attribute();
    at->set_name(name);
    at->set_type(pb::AttributeProto::FLOAT);
    at->set_f(v);
  };
  switch (q.kind) {
    case ActivationKind::Sigmoid: return g.node("Sigmoid", p, {x}).output(0);
    case ActivationKind::Tanh: return g.node("Tanh", p, {x}).output(0);
    case ActivationKind::SiLU:
      return g.node("Mul", p + "/mul", {x, g.node("Sigmoid", p + "/sigmoid", {x}).output(0)}).output(0);
    case ActivationKind::HardSwish: return g.node("HardSwish", p, {x}).output(0);
    case ActivationKind::HardSigmoid: {
      pb::NodeProto& n = g.node("HardSigmoid", p, {x});
      float_attr(n, "alpha", q.alpha);
      float_attr(n, "beta", q.beta);
      return n.output(0);
    }
    case ActivationKind::LeakyRelu: {
      pb::NodeProto& n = g.node("LeakyRelu", p, {x});
      float_attr(n, "alpha", q.alpha);
      return n.output(0);
    }
    case ActivationKind::Clip: {
      // Opset 11+: the bounds are inputs; an infinite one is left out ("" keeps max in its place).
      const std::string lo = std::isinf(q.alpha) ? "" : g.scalar(p + ".min", double(q.alpha));
      const std::string hi = std::isinf(q.beta) ? "" : g.scalar(p + ".max", double(q.beta));
      std::vector<std::string> inputs{x, lo, hi};
      while (inputs.back().empty()) inputs.pop_back();
      return g.node("Clip", p, inputs).output(0);
    }
  }
  ENGINE_FAIL("export to ONNX: {} has an unknown activation kind (a bug)", a.describe());
}

}  // namespace engine::layers::onnx::detail
