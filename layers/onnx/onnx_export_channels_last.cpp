// ChannelLayerNorm and ChannelLinear written back as PyTorch writes convnext's LayerNorm2d and pointwise
// Linear layers (onnx_ops_channels_last.cpp reads them so): Transpose perm [0, 2, 3, 1], LayerNormalization
// over the last axis or MatMul by Transpose(weight [out, in], perm [1, 0]) and Add of the bias, Transpose
// perm [0, 3, 1, 2]. An input [N, C] needs no Transposes.
#include "layers/channel_layernorm.h"
#include "layers/channel_linear.h"
#include "layers/onnx/onnx_writer.h"

namespace engine::layers::onnx::detail {

namespace {

std::string transpose(NodeSink& w, const std::string& name, const std::string& x,
                      const std::vector<std::int64_t>& perm) {
  pb::NodeProto& t = w.add_node("Transpose", name, {x});
  pb::AttributeProto* a = t.add_attribute();
  a->set_name("perm");
  a->set_type(pb::AttributeProto::INTS);
  for (const std::int64_t v : perm) a->add_ints(v);
  return t.output(0);
}

}  // namespace

std::string emit_channels_last_layer(NodeSink& w, const Layer& layer, const std::string& x) {
  const std::string& p = layer.path();
  const bool planes = layer.last_input_shape().size() != 2;  // [N, C, H, W] (or not run yet)
  auto in = [&](const std::string& v) {
    return planes ? transpose(w, p + "/transpose", v, {0, 2, 3, 1}) : v;
  };
  auto out = [&](const std::string& v) {
    return planes ? transpose(w, p + "/transpose_back", v, {0, 3, 1, 2}) : v;
  };
  if (const auto* n = dynamic_cast<const ChannelLayerNorm*>(&layer)) {
    pb::NodeProto& ln =
        w.add_node("LayerNormalization", p, {in(x), w.param(layer, "weight"), w.param(layer, "bias")});
    pb::AttributeProto* axis = ln.add_attribute();
    axis->set_name("axis");
    axis->set_type(pb::AttributeProto::INT);
    axis->set_i(-1);
    pb::AttributeProto* eps = ln.add_attribute();
    eps->set_name("epsilon");
    eps->set_type(pb::AttributeProto::FLOAT);
    eps->set_f(static_cast<float>(n->eps()));
    return out(ln.output(0));
  }
  if (const auto* l = dynamic_cast<const ChannelLinear*>(&layer)) {
    const std::string wt = transpose(w, p + "/weight_t", w.param(layer, "weight"), {1, 0});
    std::string y = w.add_node("MatMul", p + "/matmul", {in(x), wt}).output(0);
    if (l->has_bias()) y = w.add_node("Add", p + "/add", {y, w.param(layer, "bias")}).output(0);
    return out(y);
  }
  return "";
}

}  // namespace engine::layers::onnx::detail
