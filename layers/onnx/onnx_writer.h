#pragma once
// Internal to layers/onnx/: what the writer (onnx_export.cpp) lends the conversions of other files
// (onnx_export_graph.cpp): adding a node, and the graph for initializers.

#include <string>
#include <vector>

#include "layers/graph_op.h"
#include "layers/layer.h"
#include "layers/onnx/onnx_proto.h"

namespace engine::layers::onnx::detail {

class NodeSink {
 public:
  // A node named `name` (its output "<name>_<k>"), reading `inputs`.
  virtual pb::NodeProto& add_node(const std::string& op, const std::string& name,
                                  const std::vector<std::string>& inputs) = 0;
  virtual pb::GraphProto& graph() = 0;
  // The state-dict name of the layer's parameter `local`, written once as an initializer.
  virtual std::string param(const Layer& layer, const std::string& local) = 0;

 protected:
  ~NodeSink() = default;
};

// The nodes of a GraphOp (Concat, Split, Binary) named `name`; returns its outputs' names.
std::vector<std::string> emit_graph_op(NodeSink& w, const GraphOp& op, const std::string& name,
                                       const std::vector<std::string>& inputs);
// The nodes of ChannelSlice, ChannelShuffle and a GlobalAvgPool keeping [N, C, 1, 1]; "" for other layers.
std::string emit_channel_layer(NodeSink& w, const Layer& layer, const std::string& x);
// ChannelLayerNorm and ChannelLinear as PyTorch writes them, in a channels-last region (Transpose, the op on
// the last axis, Transpose back; onnx_export_channels_last.cpp); "" for other layers.
std::string emit_channels_last_layer(NodeSink& w, const Layer& layer, const std::string& x);

}  // namespace engine::layers::onnx::detail
