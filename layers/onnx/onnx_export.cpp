// Writing a model as ONNX, in inference form: every layer of the engine's tree becomes the ONNX nodes that
// compute its Eval-mode forward (BatchNorm with its running statistics, Dropout left out), at opset 17, the
// newest Debian's ONNX checker knows. GELU is written in its Erf form (the Gelu op is opset 20).
#include <cmath>
#include <cstdint>
#include <map>
#include <span>

#include "core/durable_file.h"
#include "core/error.h"
#include "layers/avgpool2d.h"
#include "layers/batchnorm2d.h"
#include "layers/channel_affine.h"
#include "layers/conv2d.h"
#include "layers/dropout.h"
#include "layers/flatten.h"
#include "layers/gelu.h"
#include "layers/global_avgpool.h"
#include "layers/graph.h"
#include "layers/linear.h"
#include "layers/maxpool2d.h"
#include "layers/mul.h"
#include "layers/onnx/onnx_activation.h"
#include "layers/onnx/onnx_proto.h"
#include "layers/onnx/onnx_writer.h"
#include "layers/relu.h"
#include "layers/residual.h"
#include "layers/sequential.h"

namespace engine::layers::onnx {

namespace pb = detail::pb;

namespace {

inline constexpr std::int64_t kExportOpset = 17;

HostTensor host_values(const Tensor& t) {
  const Tensor h = t.to(Device::cpu());
  HostTensor out;
  out.shape = t.shape();
  if (h.dtype() == DType::F64) {
    out.values = h.to_vector<double>();
  } else {
    const std::vector<float> v = h.to_vector<float>();
    out.values.assign(v.begin(), v.end());
  }
  return out;
}

class Writer final : public detail::NodeSink {
 public:
  Writer(const Model& model, pb::GraphProto& graph) : model_(model), g_(graph) {}

  std::string emit(const Layer& layer, const std::string& x) {
    const std::string& p = layer.path();
    if (const auto* s = dynamic_cast<const Sequential*>(&layer)) {
      std::string y = x;
      for (const NamedChild& c : s->children()) y = emit(*c.layer, y);
      return y;
    }
    if (const auto* r = dynamic_cast<const Residual*>(&layer)) {
      std::string a = x;
      for (const NamedChild& c : r->main_branch().children()) a = emit(*c.layer, a);
      std::string b = x;
      for (const NamedChild& c : r->shortcut().children()) b = emit(*c.layer, b);
      return node("Relu", p + "/relu", {node("Add", p + "/add", {a, b})});
    }
    if (const auto* graph = dynamic_cast<const Graph*>(&layer)) return emit_graph(*graph, x);
    if (const auto* c = dynamic_cast<const Conv2d*>(&layer)) {
      const Conv2dOptions& o = c->options();
      const int ph = o.padding_height(), pw = o.padding_width();
      pb::NodeProto& n = add_node("Conv", p, {x, param(layer, "weight")});
      if (c->has_bias()) n.add_input(param(layer, "bias"));
      ints(n, "kernel_shape", {o.kernel_height(), o.kernel_width()});
      ints(n, "strides", {o.stride_height(), o.stride_width()});
      ints(n, "pads", {ph, pw, ph, pw});  // top, left, bottom, right
      ints(n, "dilations", {o.dilation, o.dilation});
      pb::AttributeProto* g = n.add_attribute();
      g->set_name("group");
      g->set_type(pb::AttributeProto::INT);
      g->set_i(o.groups);
      return n.output(0);
    }
    if (const auto* bn = dynamic_cast<const BatchNorm2d*>(&layer)) {
      pb::NodeProto& n = add_node("BatchNormalization", p,
                                  {x, param(layer, "weight"), param(layer, "bias"),
                                   buffer(layer, "running_mean"), buffer(layer, "running_var")});
      floats(n, "epsilon", bn->eps());
      floats(n, "momentum", 1.0 - bn->momentum());
      return n.output(0);
    }
    if (const auto* m = dynamic_cast<const MaxPool2d*>(&layer)) {
      pb::NodeProto& n = add_node("MaxPool", p, {x});
      ints(n, "kernel_shape", {m->kernel_size(), m->kernel_size()});
      ints(n, "strides", {m->stride(), m->stride()});
      ints(n, "pads", {m->padding(), m->padding(), m->padding(), m->padding()});
      if (m->ceil_mode()) int_attr(n, "ceil_mode", 1);
      return n.output(0);
    }
    if (const auto* a = dynamic_cast<const AvgPool2d*>(&layer)) {
      const AvgPool2dOptions& o = a->options();
      pb::NodeProto& n = add_node("AveragePool", p, {x});
      ints(n, "kernel_shape", {o.kernel_h, o.kernel_w});
      ints(n, "strides", {o.stride_h, o.stride_w});
      ints(n, "pads", {o.pad_h, o.pad_w, o.pad_h, o.pad_w});
      int_attr(n, "count_include_pad", o.count_include_pad ? 1 : 0);
      if (o.ceil_mode) int_attr(n, "ceil_mode", 1);
      return n.output(0);
    }
    if (const auto* l = dynamic_cast<const Linear*>(&layer)) {
      pb::NodeProto& n = add_node("Gemm", p, {x, param(layer, "weight")});
      if (l->parameter_slots().size() > 1) n.add_input(param(layer, "bias"));
      pb::AttributeProto* a = n.add_attribute();
      a->set_name("transB");
      a->set_type(pb::AttributeProto::INT);
      a->set_i(1);
      return n.output(0);
    }
    if (dynamic_cast<const ReLU*>(&layer) != nullptr) return node("Relu", p, {x});
    if (dynamic_cast<const GELU*>(&layer) != nullptr) return erf_gelu(p, x);
    if (std::string y = detail::emit_channel_layer(*this, layer, x); !y.empty()) return y;
    if (std::string y = detail::emit_channels_last_layer(*this, layer, x); !y.empty()) return y;
    if (dynamic_cast<const GlobalAvgPool*>(&layer) != nullptr)
      return node("Flatten", p + "/flatten", {node("GlobalAveragePool", p, {x})});
    if (dynamic_cast<const Flatten*>(&layer) != nullptr) return node("Flatten", p, {x});
    if (const auto* m = dynamic_cast<const Mul*>(&layer))
      return node("Mul", p, {x, scalar(p + ".scale", m->scale())});
    if (const auto* a = dynamic_cast<const ChannelAffine*>(&layer)) {
      const ChannelAffineOptions& o = a->options();
      auto value = [&](const ChannelValue& v) {
        return v.trainable ? param(layer, v.name) : buffer(layer, v.name);
      };
      std::string y = x;
      if (o.scale.on) y = node("Mul", p + (o.shift.on ? "/mul" : ""), {y, value(o.scale)});
      if (o.shift.on) y = node("Add", p + (o.scale.on ? "/add" : ""), {y, value(o.shift)});
      return y;
    }
    if (dynamic_cast<const Dropout*>(&layer) != nullptr) return x;  // inference form: the identity
    const detail::ExportGraph g{
        [this](const std::string& op, const std::string& name,
               const std::vector<std::string>& in) -> pb::NodeProto& { return add_node(op, name, in); },
        [this](const std::string& name, double v) { return scalar(name, v); }};
    if (const auto* a = dynamic_cast<const Activation*>(&layer))
      return detail::export_activation(*a, p, x, g);
    if (const auto* s = dynamic_cast<const Softmax*>(&layer)) return detail::export_softmax(*s, p, x, g);
    ENGINE_FAIL("export to ONNX: {} of model '{}' has no ONNX form in the writer", layer.describe(),
                model_.name());
  }

 private:
  std::string emit_graph(const Graph& graph, const std::string& x) {
    std::map<int, std::string> names{{0, x}};
    const std::string p = graph.path().empty() ? "graph" : graph.path();
    auto name_of = [&](int v) -> std::string {
      if (const auto it = names.find(v); it != names.end()) return it->second;
      Shape shape;
      const std::vector<double>* c = graph.constant_values(v, &shape);
      ENGINE_CHECK(c != nullptr, "export to ONNX: graph value {} is unknown (a bug)", v);
      names[v] = initializer(fmt::format("{}.constant_{}", p, v), HostTensor{*c, shape});
      return names[v];
    };
    for (const Graph::NodeView& n : graph.nodes()) {
      if (n.op != nullptr) {
        std::vector<std::string> in;
        for (const int v : n.inputs) in.push_back(name_of(v));
        const std::vector<std::string> out = detail::emit_graph_op(*this, *n.op, p + "/" + n.name, in);
        for (std::size_t i = 0; i < out.size(); ++i) names[n.outputs[i]] = out[i];
        continue;
      }
      names[n.output] = n.layer != nullptr
                            ? emit(*n.layer, name_of(n.inputs[0]))
                            : node("Add", p + "/" + n.name, {name_of(n.inputs[0]), name_of(n.inputs[1])});
    }
    return name_of(graph.output());
  }

  // y = 0.5 * x * (1 + erf(x / sqrt 2)), as PyTorch writes nn.GELU before opset 20.
  std::string erf_gelu(const std::string& p, const std::string& x) {
    const std::string d = node("Div", p + "/div", {x, scalar(p + ".sqrt2", std::sqrt(2.0))});
    const std::string e = node("Add", p + "/add", {node("Erf", p + "/erf", {d}), scalar(p + ".one", 1.0)});
    return node("Mul", p + "/half", {node("Mul", p + "/mul", {x, e}), scalar(p + ".half", 0.5)});
  }

  pb::GraphProto& graph() override { return g_; }

 private:
  pb::NodeProto& add_node(const std::string& op, const std::string& name,
                          const std::vector<std::string>& inputs) override {
    pb::NodeProto& n = *g_.add_node();
    n.set_op_type(op);
    n.set_name(name.empty() ? op : name);
    for (const std::string& in : inputs) n.add_input(in);
    n.add_output(fmt::format("{}_{}", n.name(), counter_++));
    return n;
  }
  std::string node(const std::string& op, const std::string& name, const std::vector<std::string>& inputs) {
    return add_node(op, name, inputs).output(0);
  }
  static void ints(pb::NodeProto& n, const std::string& name, const std::vector<std::int64_t>& v) {
    pb::AttributeProto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(pb::AttributeProto::INTS);
    for (const std::int64_t x : v) a->add_ints(x);
  }
  static void int_attr(pb::NodeProto& n, const std::string& name, std::int64_t v) {
    pb::AttributeProto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(pb::AttributeProto::INT);
    a->set_i(v);
  }
  static void floats(pb::NodeProto& n, const std::string& name, double v) {
    pb::AttributeProto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(pb::AttributeProto::FLOAT);
    a->set_f(static_cast<float>(v));
  }
  std::string initializer(const std::string& name, const HostTensor& t) {
    *g_.add_initializer() = detail::make_tensor(name, t);
    return name;
  }
  std::string scalar(const std::string& name, double v) { return initializer(name, HostTensor{{v}, {}}); }
  // The state-dict name of the layer's parameter or buffer `local`, written once as an initializer.
  std::string param(const Layer& layer, const std::string& local) override {
    for (const ParamSlot& s : layer.parameter_slots()) {
      if (s.name == local) return initializer(model_.parameters().at(s.index).name, host_values(s.value));
    }
    ENGINE_FAIL("export to ONNX: {} has no parameter '{}' (a bug)", layer.describe(), local);
  }
  std::string buffer(const Layer& layer, const std::string& local) {
    for (const Buffer& b : model_.buffers()) {
      if (b.layer == &layer && b.name.size() > local.size() &&
          b.name.compare(b.name.size() - local.size(), local.size(), local) == 0)
        return initializer(b.name, host_values(b.value));
    }
    ENGINE_FAIL("export to ONNX: {} has no buffer '{}' (a bug)", layer.describe(), local);
  }

  const Model& model_;
  pb::GraphProto& g_;
  int counter_ = 0;
};

void set_shape(pb::ValueInfoProto& v, const std::string& name, const Shape& shape) {
  v.set_name(name);
  pb::TypeProto_Tensor* t = v.mutable_type()->mutable_tensor_type();
  t->set_elem_type(pb::TensorProto::FLOAT);
  for (std::size_t i = 0; i < shape.size(); ++i) {
    pb::TensorShapeProto_Dimension* d = t->mutable_shape()->add_dim();
    if (i == 0)
      d->set_dim_param("N");
    else
      d->set_dim_value(shape[i]);
  }
}

}  // namespace

void export_model(const Model& model, const std::string& path) {
  ENGINE_CHECK(model.finalized(), "export to ONNX: model '{}' is not finalized", model.name());
  ENGINE_CHECK(!model.sample_shape().empty(), "export to ONNX: model '{}' has no known input shape",
               model.name());
  pb::ModelProto m;
  m.set_ir_version(8);
  m.set_producer_name("cnn_engine");
  pb::OperatorSetIdProto* opset = m.add_opset_import();
  opset->set_domain("");
  opset->set_version(kExportOpset);
  pb::GraphProto& g = *m.mutable_graph();
  g.set_name(model.name());
  Shape in{1};
  in.insert(in.end(), model.sample_shape().begin(), model.sample_shape().end());
  set_shape(*g.add_input(), "input", in);
  Writer w(model, g);
  const std::string y = w.emit(model.root(), "input");
  pb::NodeProto& out = *g.add_node();
  out.set_op_type("Identity");
  out.set_name("logits");
  out.add_input(y);
  out.add_output("logits");
  set_shape(*g.add_output(), "logits", model.output_shape(in));
  detail::run_checker(m, path);
  // Written next to the target, flushed and renamed over it: a reader never sees half a file, and a failed
  // write leaves nothing behind.
  std::string bytes;
  ENGINE_CHECK(m.SerializeToString(&bytes), "export to ONNX: cannot serialize the model for '{}'", path);
  const std::span<const std::uint8_t> piece(reinterpret_cast<const std::uint8_t*>(bytes.data()),
                                            bytes.size());
  write_file_durably("export to ONNX", path, {&piece, 1});
}

}  // namespace engine::layers::onnx
