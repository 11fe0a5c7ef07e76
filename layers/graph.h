#pragma once
// Graph: a layer made of other layers wired as a directed acyclic graph, for models read from a file
// (layers/onnx/). Values are numbered: 0 is the graph's input, constants and node outputs follow. A node is
// a layer with one input value, a sum of two values of one shape (a residual join, kernels' residual_add),
// or a GraphOp (layers/graph_op.h: Concat, Split, broadcasting Add/Sub/Mul/Div) with several inputs and, for
// Split, several outputs.
//
//   forward   runs the nodes in the order they were added, which must be a topological order (add_node
//             refuses an input that is not made yet), and returns the output value;
//   backward  runs them in reverse: a value that feeds several nodes gets the SUM of their gradients
//             (a fresh tensor per sum, never an in-place add: a gradient tensor may be shared by the two
//             inputs of a sum node), so the grad-ready hook fires from the last node's parameters to the
//             first's, as in a Sequential.
//
// Children are named by the caller (the state-dict prefix of their parameters: "layer1.0.conv1"), so a
// Graph built from PyTorch's export has PyTorch's state-dict names. Constants (test inputs bound to values)
// carry no gradient; a node reading a constant or the graph's input (when the graph's needs_input_grad is
// false) computes no dx.

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "layers/graph_op.h"
#include "layers/layer.h"

namespace engine::layers {

class Graph final : public Layer {
 public:
  Graph() = default;

  // A constant value (converted to the model's dtype and device on first use). Returns its id.
  int add_constant(std::vector<double> values, Shape shape);
  // A node `layer` reading value `input`, named `name` (unique); returns its output value's id.
  int add_node(std::string name, std::unique_ptr<Layer> layer, int input);
  // A node a + b (same shape at run time); `name` is for messages. Returns its output value's id.
  int add_sum(std::string name, int a, int b);
  // A node `op` reading `inputs`; returns its output values' ids (op->num_outputs() of them).
  std::vector<int> add_op(std::string name, std::unique_ptr<GraphOp> op, std::vector<int> inputs);
  void set_output(int value);

  std::string_view kind() const override { return "Graph"; }
  std::vector<NamedChild> children() const override;
  int num_values() const { return num_values_; }
  int output() const { return output_; }

  // What a writer (layers/onnx/onnx_export.cpp) reads: the nodes in order, and the constants.
  struct NodeView {
    const std::string& name;
    const Layer* layer;  // null: a sum or an op
    const GraphOp* op;   // null: a layer or a sum
    const std::vector<int>& inputs;
    int output;  // the first output
    const std::vector<int>& outputs;
  };
  std::vector<NodeView> nodes() const;
  // The (producer, consumer) layer pairs where the consumer alone reads the producer's output, which is not
  // the graph's output: the pairs the fusion passes (layers/fusion.h) may join.
  std::vector<std::pair<Layer*, Layer*>> sole_consumer_pairs();
  // The values and shape of constant `value`; null when it is not a constant.
  const std::vector<double>* constant_values(int value, Shape* shape) const;

 protected:
  Tensor forward_impl(const Tensor& x, Mode mode) override;
  Tensor backward_impl(const Tensor& dy, Mode mode) override;
  Shape output_shape_impl(const Shape& input_shape) const override;
  void on_needs_input_grad_changed() override;

 private:
  struct Node {
    std::string name;
    std::unique_ptr<Layer> layer;  // null: a sum of inputs[0] and inputs[1], or an op
    std::unique_ptr<GraphOp> op;
    std::vector<int> inputs;
    int output = 0;            // outputs[0]
    std::vector<int> outputs;  // one for a layer or a sum
  };
  void run_op(Node& n, std::vector<Tensor>& values, Mode mode);
  void backward_op(Node& n, std::vector<Tensor>& grads);
  void check_value(int value, const std::string& who) const;
  bool carries_grad(int value) const;  // whether backward must produce dL/d(value)
  const Tensor& constant(int value);   // on the context's device and dtype
  Tensor sum(const Tensor& a, const Tensor& b) const;
  void accumulate(std::vector<Tensor>& grads, int value, const Tensor& g) const;

  std::vector<Node> nodes_;
  struct Constant {
    std::vector<double> values;
    Shape shape;
    Tensor tensor;  // on the context's device and dtype, made on first use
  };
  std::vector<std::unique_ptr<Constant>> constants_;  // indexed by value id; null for non-constants
  int num_values_ = 1;
  int output_ = -1;
};

}  // namespace engine::layers
