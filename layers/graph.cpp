#include "layers/graph.h"

#include <utility>

#include "kernels/ops/residual_add.h"
#include "kernels/ops/transpose.h"

namespace engine::layers {

void Graph::check_value(int value, const std::string& who) const {
  LAYER_CHECK(value >= 0 && value < num_values_, "{} reads value {}, which no earlier node makes", who,
              value);
}

int Graph::add_constant(std::vector<double> values, Shape shape) {
  LAYER_CHECK(!finalized(), "constants are added before the model is finalized");
  LAYER_CHECK(static_cast<std::int64_t>(values.size()) == shape_numel(shape),
              "a constant of shape {} with {} values", shape_str(shape), values.size());
  constants_.resize(static_cast<std::size_t>(num_values_) + 1);
  constants_.back() = std::make_unique<Constant>(Constant{std::move(values), std::move(shape), Tensor()});
  return num_values_++;
}

int Graph::add_node(std::string name, std::unique_ptr<Layer> layer, int input) {
  LAYER_CHECK(!finalized(), "nodes are added before the model is finalized");
  LAYER_CHECK(layer != nullptr, "node '{}' has no layer", name);
  for (const Node& n : nodes_) LAYER_CHECK(n.name != name, "two nodes named '{}'", name);
  check_value(input, "node '" + name + "'");
  Node node{std::move(name), std::move(layer), nullptr, {input}, num_values_, {num_values_}};
  ++num_values_;
  node.layer->set_needs_input_grad(carries_grad(input));
  nodes_.push_back(std::move(node));
  return nodes_.back().output;
}

int Graph::add_sum(std::string name, int a, int b) {
  LAYER_CHECK(!finalized(), "nodes are added before the model is finalized");
  check_value(a, "sum '" + name + "'");
  check_value(b, "sum '" + name + "'");
  nodes_.push_back(Node{std::move(name), nullptr, nullptr, {a, b}, num_values_, {num_values_}});
  ++num_values_;
  return nodes_.back().output;
}

std::vector<int> Graph::add_op(std::string name, std::unique_ptr<GraphOp> op, std::vector<int> inputs) {
  LAYER_CHECK(!finalized(), "nodes are added before the model is finalized");
  LAYER_CHECK(op != nullptr, "node '{}' has no op", name);
  for (const int v : inputs) check_value(v, "node '" + name + "'");
  Node node{std::move(name), nullptr, std::move(op), std::move(inputs), num_values_, {}};
  for (int i = 0; i < node.op->num_outputs(); ++i) node.outputs.push_back(num_values_++);
  nodes_.push_back(std::move(node));
  return nodes_.back().outputs;
}

void Graph::set_output(int value) {
  check_value(value, "the output");
  output_ = value;
}

std::vector<NamedChild> Graph::children() const {
  std::vector<NamedChild> out;
  for (const Node& n : nodes_) {
    if (n.layer) out.push_back({n.name, n.layer.get()});
  }
  return out;
}

std::vector<Graph::NodeView> Graph::nodes() const {
  std::vector<NodeView> out;
  for (const Node& n : nodes_)
    out.push_back({n.name, n.layer.get(), n.op.get(), n.inputs, n.output, n.outputs});
  return out;
}

std::vector<std::pair<Layer*, Layer*>> Graph::sole_consumer_pairs() {
  std::vector<int> readers(static_cast<std::size_t>(num_values_), 0);
  std::vector<Node*> reader(static_cast<std::size_t>(num_values_), nullptr);
  for (Node& n : nodes_) {
    for (const int v : n.inputs) {
      ++readers[static_cast<std::size_t>(v)];
      reader[static_cast<std::size_t>(v)] = &n;
    }
  }
  std::vector<std::pair<Layer*, Layer*>> pairs;
  for (const Node& n : nodes_) {
    const auto v = static_cast<std::size_t>(n.output);
    if (n.layer == nullptr || n.output == output_ || readers[v] != 1 || reader[v]->layer == nullptr) continue;
    pairs.emplace_back(n.layer.get(), reader[v]->layer.get());
  }
  return pairs;
}

const std::vector<double>* Graph::constant_values(int value, Shape* shape) const {
  const auto v = static_cast<std::size_t>(value);
  if (value < 0 || v >= constants_.size() || constants_[v] == nullptr) return nullptr;
  *shape = constants_[v]->shape;
  return &constants_[v]->values;
}

bool Graph::carries_grad(int value) const {
  if (value == 0) return needs_input_grad();
  const auto v = static_cast<std::size_t>(value);
  return v >= constants_.size() || constants_[v] == nullptr;
}

void Graph::on_needs_input_grad_changed() {
  for (Node& n : nodes_) {
    if (n.layer) n.layer->set_needs_input_grad(carries_grad(n.inputs[0]));
  }
}

const Tensor& Graph::constant(int value) {
  Constant& c = *constants_.at(static_cast<std::size_t>(value));
  if (!c.tensor.defined()) {
    const ExecutionContext& ctx = context();
    Tensor host;
    if (ctx.dtype == DType::F64) {
      host = Tensor::from_vector(c.values, c.shape);
    } else {
      host = Tensor::from_vector(std::vector<float>(c.values.begin(), c.values.end()), c.shape);
    }
    c.tensor = host.to(ctx.device, ctx.stream);
    // A 4-d constant ([1, C, 1, 1] beside an activation) in the activations' layout.
    if (c.shape.size() == 4 && ctx.layout != Layout::NCHW)
      c.tensor =
          ops::to_layout(ctx, c.tensor, activation_layout(ctx.layout, c.shape[1], c.shape[2] * c.shape[3]));
  }
  return c.tensor;
}

Shape Graph::output_shape_impl(const Shape& input_shape) const {
  LAYER_CHECK(output_ >= 0, "has no output (set_output was not called)");
  std::vector<Shape> shapes(static_cast<std::size_t>(num_values_));
  shapes.at(0) = input_shape;
  for (std::size_t v = 0; v < constants_.size(); ++v) {
    if (constants_[v]) shapes[v] = constants_[v]->shape;
  }
  for (const Node& n : nodes_) {
    const Shape& a = shapes[static_cast<std::size_t>(n.inputs[0])];
    if (n.op) {
      std::vector<Shape> in;
      for (const int v : n.inputs) in.push_back(shapes[static_cast<std::size_t>(v)]);
      std::vector<Shape> out;
      try {
        out = n.op->output_shapes(in);
      } catch (const Error& e) {
        LAYER_CHECK(false, "node '{}': {}", n.name, e.what());
      }
      for (std::size_t i = 0; i < out.size(); ++i) shapes[static_cast<std::size_t>(n.outputs[i])] = out[i];
    } else if (n.layer) {
      shapes[static_cast<std::size_t>(n.output)] = n.layer->output_shape(a);
    } else {
      const Shape& b = shapes[static_cast<std::size_t>(n.inputs[1])];
      LAYER_CHECK(a == b, "sum '{}' adds {} and {}: the engine adds equal shapes only (no broadcasting)",
                  n.name, shape_str(a), shape_str(b));
      shapes[static_cast<std::size_t>(n.output)] = a;
    }
  }
  return shapes[static_cast<std::size_t>(output_)];
}

// Under bf16 autocast both operands are usually bf16; a mixed pair gives float32, PyTorch's type promotion.
Tensor Graph::sum(const Tensor& a, const Tensor& b) const {
  Tensor y = new_tensor(a.shape(), a.dtype() == b.dtype() ? a.dtype() : context().dtype);
  ops::residual_add(context(), a, b, y);
  return y;
}

Tensor Graph::forward_impl(const Tensor& x, Mode mode) {
  std::vector<Tensor> values(static_cast<std::size_t>(num_values_));
  values.at(0) = x;
  for (std::size_t v = 0; v < constants_.size(); ++v) {
    if (constants_[v]) values[v] = constant(static_cast<int>(v));
  }
  for (Node& n : nodes_) {
    if (n.op) {
      run_op(n, values, mode);
      continue;
    }
    const Tensor& a = values[static_cast<std::size_t>(n.inputs[0])];
    values[static_cast<std::size_t>(n.output)] =
        n.layer ? n.layer->forward(a, mode) : sum(a, values[static_cast<std::size_t>(n.inputs[1])]);
  }
  // The layers keep what their backward needs; the graph keeps nothing but their shapes.
  return values[static_cast<std::size_t>(output_)];
}

void Graph::accumulate(std::vector<Tensor>& grads, int value, const Tensor& g) const {
  if (!g.defined() || !carries_grad(value)) return;
  Tensor& slot = grads[static_cast<std::size_t>(value)];
  slot = slot.defined() ? sum(slot, g) : g;
}

void Graph::run_op(Node& n, std::vector<Tensor>& values, Mode mode) {
  std::vector<Tensor> in;
  for (const int v : n.inputs) in.push_back(values[static_cast<std::size_t>(v)]);
  std::vector<Tensor> out = n.op->forward(context(), in, mode);
  for (std::size_t i = 0; i < out.size(); ++i)
    values[static_cast<std::size_t>(n.outputs[i])] = std::move(out[i]);
}

void Graph::backward_op(Node& n, std::vector<Tensor>& grads) {
  std::vector<Tensor> dy;
  bool any = false;
  for (const int v : n.outputs) {
    dy.push_back(std::move(grads[static_cast<std::size_t>(v)]));
    any = any || dy.back().defined();
  }
  LAYER_CHECK(any, "node '{}' reaches no output (a bug in the graph's builder)", n.name);
  std::vector<bool> need;
  for (const int v : n.inputs) need.push_back(carries_grad(v));
  const std::vector<Tensor> dx = n.op->backward(context(), dy, need);
  for (std::size_t i = 0; i < n.inputs.size(); ++i) accumulate(grads, n.inputs[i], dx[i]);
}

Tensor Graph::backward_impl(const Tensor& dy, Mode) {
  std::vector<Tensor> grads(static_cast<std::size_t>(num_values_));
  grads.at(static_cast<std::size_t>(output_)) = dy;
  for (auto it = nodes_.rbegin(); it != nodes_.rend(); ++it) {
    if (it->op) {
      backward_op(*it, grads);
      continue;
    }
    Tensor g = std::move(grads[static_cast<std::size_t>(it->output)]);
    // The builder leaves out nodes whose output reaches nothing, so every node has a gradient here.
    LAYER_CHECK(g.defined(), "node '{}' reaches no output (a bug in the graph's builder)", it->name);
    if (it->layer) {
      accumulate(grads, it->inputs[0], it->layer->backward(g));
    } else {
      accumulate(grads, it->inputs[0], g);
      accumulate(grads, it->inputs[1], g);
    }
  }
  return needs_input_grad() ? grads[0] : Tensor();
}

}  // namespace engine::layers
