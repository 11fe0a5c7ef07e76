#pragma once
// Internal to layers/onnx/: the pointwise activations (layers/activation.h) and Softmax in and out of ONNX,
// beside the other ops' tables (onnx_ops.cpp reads, onnx_export.cpp writes).

#include <functional>
#include <string>
#include <vector>

#include "layers/activation.h"
#include "layers/onnx/onnx_builder.h"
#include "layers/softmax.h"

namespace engine::layers::onnx::detail {

// Sigmoid (and Sigmoid then Mul by its own input: one SiLU), Tanh, HardSigmoid, HardSwish, Clip (min and max
// as attributes before opset 11, as constant inputs since), LeakyRelu: adds the layer and returns true;
// false for any other op type. Refuses what the layer cannot take, naming the node.
bool convert_activation(Builder& b, const pb::NodeProto& node);

// How the writer adds to its graph: a node (op, name, inputs; its output named by the writer) and a scalar
// float initializer.
struct ExportGraph {
  std::function<pb::NodeProto&(const std::string&, const std::string&, const std::vector<std::string>&)> node;
  std::function<std::string(const std::string&, double)> scalar;
};

// Writes `a` (path p) on input x at opset 17; returns its output. SiLU becomes Sigmoid then Mul.
std::string export_activation(const Activation& a, const std::string& p, const std::string& x,
                              const ExportGraph& g);

// Softmax over the classes of [N, classes] (onnx_ops_softmax.cpp): adds the layer and returns true; false
// for another op type. Written back as Softmax, axis 1.
bool convert_softmax(Builder& b, const pb::NodeProto& node);
std::string export_softmax(const Softmax& s, const std::string& p, const std::string& x,
                           const ExportGraph& g);

}  // namespace engine::layers::onnx::detail
