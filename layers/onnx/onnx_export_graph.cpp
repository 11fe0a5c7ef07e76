// Writing the Graph's several-input nodes and the channel layers as ONNX (opset 17): Concat and Split on
// axis 1, Add/Sub/Mul/Div (ONNX broadcasts as the engine does), Slice of a channel range, the channel
// shuffle as Reshape [0, g, C/g, -1], Transpose [0, 2, 1, 3], Reshape back to Shape(x), GlobalAveragePool.
#include "core/error.h"
#include "layers/channel_ops.h"
#include "layers/global_avgpool.h"
#include "layers/graph_ops.h"
#include "layers/onnx/onnx_writer.h"

namespace engine::layers::onnx::detail {

namespace {

void set_int(pb::NodeProto& n, const std::string& name, std::int64_t v) {
  pb::AttributeProto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(pb::AttributeProto::INT);
  a->set_i(v);
}

// An int64 initializer (shapes, split sizes, slice bounds).
std::string int64s(NodeSink& w, const std::string& name, const std::vector<std::int64_t>& v) {
  pb::TensorProto& t = *w.graph().add_initializer();
  t.set_name(name);
  t.set_data_type(pb::TensorProto::INT64);
  t.add_dims(static_cast<std::int64_t>(v.size()));
  for (const std::int64_t x : v) t.add_int64_data(x);
  return name;
}

}  // namespace

std::vector<std::string> emit_graph_op(NodeSink& w, const GraphOp& op, const std::string& name,
                                       const std::vector<std::string>& inputs) {
  if (dynamic_cast<const Concat*>(&op) != nullptr) {
    pb::NodeProto& n = w.add_node("Concat", name, inputs);
    set_int(n, "axis", 1);
    return {n.output(0)};
  }
  if (const auto* s = dynamic_cast<const Split*>(&op)) {
    pb::NodeProto& n = w.add_node("Split", name, {inputs.at(0), int64s(w, name + ".split", s->sizes())});
    set_int(n, "axis", 1);
    std::vector<std::string> out{n.output(0)};
    for (std::size_t i = 1; i < s->sizes().size(); ++i) {
      n.add_output(fmt::format("{}_{}", n.output(0), i));
      out.push_back(n.output(static_cast<int>(i)));
    }
    return out;
  }
  if (const auto* b = dynamic_cast<const Binary*>(&op))
    return {w.add_node(std::string(b->kind()), name, inputs).output(0)};
  ENGINE_FAIL("export to ONNX: graph node '{}' ({}) has no ONNX form in the writer", name, op.kind());
}

std::string emit_channel_layer(NodeSink& w, const Layer& layer, const std::string& x) {
  const std::string& p = layer.path();
  if (const auto* s = dynamic_cast<const ChannelSlice*>(&layer)) {
    return w
        .add_node("Slice", p,
                  {x, int64s(w, p + ".starts", {s->begin()}), int64s(w, p + ".ends", {s->end()}),
                   int64s(w, p + ".axes", {1})})
        .output(0);
  }
  if (const auto* c = dynamic_cast<const ChannelShuffle*>(&layer)) {
    const std::int64_t g = c->groups();
    const std::string grouped =
        w.add_node("Reshape", p + "/reshape", {x, int64s(w, p + ".grouped", {0, g, c->channels() / g, -1})})
            .output(0);
    pb::NodeProto& t = w.add_node("Transpose", p + "/transpose", {grouped});
    pb::AttributeProto* perm = t.add_attribute();
    perm->set_name("perm");
    perm->set_type(pb::AttributeProto::INTS);
    for (const std::int64_t v : {0, 2, 1, 3}) perm->add_ints(v);
    const std::string shape = w.add_node("Shape", p + "/shape", {x}).output(0);
    return w.add_node("Reshape", p, {t.output(0), shape}).output(0);
  }
  if (const auto* a = dynamic_cast<const GlobalAvgPool*>(&layer); a != nullptr && a->keep_dims())
    return w.add_node("GlobalAveragePool", p, {x}).output(0);
  return "";
}

}  // namespace engine::layers::onnx::detail
