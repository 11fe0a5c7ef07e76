#pragma once
// Internal to layers/onnx/: the state of one import, shared by the graph walk (onnx_import.cpp) and the
// per-op conversions (onnx_ops.cpp).

#include <array>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "layers/graph.h"
#include "layers/onnx/onnx_proto.h"

namespace engine::layers::onnx::detail {

// What a tensor name of the ONNX graph stands for while the graph is built.
struct Value {
  int id = -1;            // the Graph's value id; -1 for a constant not (yet) in the graph
  bool constant = false;  // an initializer, a bound input or a Constant node's output
  HostTensor data;        // a constant's values
  Shape shape;            // the engine's shape of a run-time value, with the file's batch size
  // A constant computed at import from other constants (a folded shape subgraph, onnx_shape_fold.cpp), not a
  // tensor of the file: never a trainable weight (PyTorch's newer exporter writes a bias-free convolution's
  // bias as zeros expanded to [K]).
  bool computed = false;
  // A run-time value inside a channels-last region (after a Transpose perm [0, 2, 3, 1]): the file sees it
  // [N, H, W, C], the engine keeps it [N, C, H, W] (onnx_ops_channels_last.cpp).
  bool channels_last = false;
};

class Builder {
 public:
  Builder(std::string what, std::int64_t opset, const ImportOptions& options)
      : what_(std::move(what)), opset_(opset), options_(options), graph_(std::make_unique<Graph>()) {}

  const std::string& what() const { return what_; }
  std::int64_t opset() const { return opset_; }
  const ImportOptions& options() const { return options_; }
  Graph& graph() { return *graph_; }
  std::unique_ptr<Graph> take_graph() { return std::move(graph_); }

  // "ONNX model 'f.onnx': node '/conv1/Conv' (Conv): " — the prefix of every message about a node.
  std::string where(const pb::NodeProto& node) const;
  [[noreturn]] void refuse(const pb::NodeProto& node, const std::string& message) const;

  void define(const std::string& name, Value v) { values_[name] = std::move(v); }
  bool has(const std::string& name) const { return values_.count(name) > 0; }
  const Value& value_of(const std::string& name) const { return values_.at(name); }
  const Value& value(const pb::NodeProto& node, int input) const;  // refuses a missing input
  bool has_input(const pb::NodeProto& node, int input) const;      // present and not ""
  // A run-time value's id and shape (refuses a constant), or a constant's values (refuses a run-time value).
  const Value& runtime(const pb::NodeProto& node, int input) const;
  const HostTensor& constant(const pb::NodeProto& node, int input) const;
  // A weight: a constant, claimed by this node alone (a second claim is a tied weight, refused).
  const HostTensor& weight(const pb::NodeProto& node, int input);
  // Whether the node's bias input is a trainable bias: absent, or zeros computed at import (a bias-free layer
  // as PyTorch's newer exporter writes it), is none; a computed non-zero bias is refused (it would be fixed).
  bool has_bias(const pb::NodeProto& node, int input) const;

  // Adds `layer` reading the node's input `input_name` and defines `output`. `params` are the layer's local
  // slot names and the ONNX tensors that initialize them; the child is named after their common prefix
  // ("layer1.0.conv1" for "layer1.0.conv1.weight"), so state-dict names are the file's.
  void add_layer(const pb::NodeProto& node, std::unique_ptr<Layer> layer, const std::string& input_name,
                 const std::vector<std::pair<std::string, std::string>>& params,
                 const std::vector<HostTensor>& values, const std::string& output);
  // output = a + b of two values (run-time, or a constant of the same shape).
  void add_sum(const pb::NodeProto& node, const std::string& a, const std::string& b,
               const std::string& output);
  void alias(const std::string& output, const std::string& input) { values_[output] = values_.at(input); }
  // Adds a GraphOp reading `inputs` (run-time values or constants) and defines `outputs` (an empty name: an
  // output nothing reads); refuses, naming the node, inputs whose shapes the op does not take
  // (onnx_ops_graph.cpp).
  void add_op(const pb::NodeProto& node, std::unique_ptr<GraphOp> op, const std::vector<std::string>& inputs,
              const std::vector<std::string>& outputs);

  // Nodes that read `name` (in the reachable graph), for the pattern matches; set by the graph walk.
  std::map<std::string, std::vector<const pb::NodeProto*>> consumers;
  std::set<const pb::NodeProto*> consumed;  // nodes folded into an earlier node's layer by a pattern
  // Weights the layers initialize themselves instead of taking the file's values (--new-head's classifier,
  // onnx_new_head.cpp).
  std::set<std::string> fresh_weights;
  // The graph's input holds integers (ONNX's node tests of uint8 arithmetic): Sub, Mul and Div, which wrap or
  // truncate in integers, are refused rather than computed in float (onnx_ops_graph.cpp).
  bool integer_input = false;
  const pb::NodeProto* delegated = nullptr;  // a node of a channels-last region converted as outside one

 private:
  int graph_value(const pb::NodeProto& node, const std::string& name);
  std::string child_name(const pb::NodeProto& node,
                         const std::vector<std::pair<std::string, std::string>>& params) const;

  std::string what_;
  std::int64_t opset_;
  const ImportOptions& options_;
  std::unique_ptr<Graph> graph_;
  std::map<std::string, Value> values_;
  std::set<std::string> claimed_weights_;
  std::set<std::string> child_names_;
  int unnamed_ = 0;
};

// Refuses, by name, a node with fewer inputs than its op requires, an empty required input or no output
// (onnx_arity.cpp); run on every node before any is read.
void check_arity(const Builder& b, const pb::NodeProto& node);
// ImportOptions::new_head: the classifier before the output (a Gemm, MatMul (+ Add) or 1x1 Conv, through
// shape-keeping nodes) gets `classes` outputs, its weights fresh (onnx_new_head.cpp); refuses naming the
// node where the walk from the output stops.
void replace_head(Builder& b, const pb::GraphProto& g, const std::vector<const pb::NodeProto*>& order,
                  int classes);
// Adds the layers of one node (or of a pattern starting at it) to the builder; refuses what it cannot.
void convert_node(Builder& b, const pb::NodeProto& node);
// The shape subgraphs folded to constants, and the ops of several inputs or outputs or on channels
// (onnx_ops_graph.cpp); false when the node is none of those (convert_node goes on).
bool convert_graph_node(Builder& b, const pb::NodeProto& node);
// Channels-last regions (onnx_ops_channels_last.cpp): whether the node reads a value of one; the Transposes
// in and out and the ops converted there (true), the elementwise ops checked and left to convert_node
// (convert_node again, `delegated` set), the rest refused; false for a node outside any region.
bool convert_channels_last(Builder& b, const pb::NodeProto& node);
// The op types convert_node knows, for messages.
std::string supported_ops();

// auto_pad SAME_UPPER or SAME_LOWER (onnx_auto_pad.cpp)?
bool is_same_auto_pad(const std::string& auto_pad);
// The pads {h, w} that auto_pad SAME_* gives a window (kernel, stride, dilation per axis {h, w}) over x [N,
// C, H, W]; refuses, naming the node and the pads, a total that is odd (the layers pad both ends alike).
std::pair<int, int> same_pads(const Builder& b, const pb::NodeProto& node, const std::string& auto_pad,
                              const Shape& x, const std::array<int, 2>& kernel,
                              const std::array<int, 2>& stride, const std::array<int, 2>& dilation);

}  // namespace engine::layers::onnx::detail
