#include "benchmarks/common/layer_costs.h"

#include <utility>

#include <fmt/format.h>

#include "layers/avgpool2d.h"
#include "layers/batchnorm2d.h"
#include "layers/channel_linear.h"
#include "layers/conv2d.h"
#include "layers/graph.h"
#include "layers/linear.h"
#include "layers/maxpool2d.h"
#include "layers/models.h"
#include "layers/residual.h"
#include "layers/sequential.h"

namespace engine::bench {

namespace {

constexpr double kF32 = 4.0;

double numel(const Shape& s) { return static_cast<double>(shape_numel(s)); }

std::int64_t own_params(const layers::Layer& layer) {
  std::int64_t n = 0;
  for (const layers::ParamSlot& p : layer.parameter_slots()) n += shape_numel(p.shape);
  return n;
}

// {in_features, out_features} of a Linear or a ChannelLinear; {0, 0} for any other layer.
std::pair<int, int> linear_features(const layers::Layer& layer) {
  if (const auto* fc = dynamic_cast<const layers::Linear*>(&layer))
    return {fc->in_features(), fc->out_features()};
  if (const auto* cl = dynamic_cast<const layers::ChannelLinear*>(&layer))
    return {cl->in_features(), cl->out_features()};
  return {0, 0};
}

// The cost of one leaf layer with input shape `in`.
LayerCost leaf_cost(const layers::Layer& layer, const Shape& in) {
  LayerCost c;
  c.path = layer.path();
  c.kind = std::string(layer.kind());
  c.in = in;
  c.out = layer.output_shape(in);
  c.params = own_params(layer);
  c.needs_input_grad = layer.needs_input_grad();
  const double x = numel(c.in), y = numel(c.out), p = static_cast<double>(c.params);
  const double dx_bytes = c.needs_input_grad ? kF32 * x : 0.0;
  if (const auto* conv = dynamic_cast<const layers::Conv2d*>(&layer)) {
    const layers::Conv2dOptions& o = conv->options();
    c.kernel = o.kernel_size;  // the height's (the kernel benchmarks take the built-in, square models)
    c.stride = o.stride;
    c.padding = o.padding;
    c.out_channels = o.out_channels;
    c.bias = o.bias;
    const double macs =
        y * (static_cast<double>(o.in_channels) / o.groups) * o.kernel_height() * o.kernel_width();
    const double bias_ops = o.bias ? y : 0.0;
    c.forward_flops = 2 * macs + bias_ops;
    c.backward_flops = 2 * macs + (c.needs_input_grad ? 2 * macs : 0.0) + bias_ops;
    c.forward_bytes = kF32 * (x + p + y);
    c.backward_bytes = kF32 * (y + x + p + p) + dx_bytes;  // dy, x, w, dw (+ dx)
  } else if (const auto [in_f, out_f] = linear_features(layer); in_f > 0) {
    // Linear, and ChannelLinear (nn.Linear on each pixel's channels, convnext's, run as a 1x1 convolution):
    // in_features multiply-adds per output element, plus the bias where the layer has one.
    c.out_channels = out_f;
    c.bias = c.params > static_cast<std::int64_t>(in_f) * out_f;
    const double macs = y * in_f;
    const double bias_ops = c.bias ? y : 0.0;
    c.forward_flops = 2 * macs + bias_ops;
    c.backward_flops = 2 * macs + (c.needs_input_grad ? 2 * macs : 0.0) + bias_ops;
    c.forward_bytes = kF32 * (x + p + y);
    c.backward_bytes = kF32 * (y + x + p + p) + dx_bytes;
  } else if (c.kind == "BatchNorm2d" || c.kind == "ChannelLayerNorm") {
    // ChannelLayerNorm normalizes each pixel over its channels: BatchNorm's per-element work.
    c.forward_flops = 8 * x;
    c.backward_flops = 11 * x;
    c.forward_bytes = kF32 * (x + y + p);
    c.backward_bytes = kF32 * (x + y + p + p) + dx_bytes;  // x, dy, gamma, dgamma/dbeta (+ dx)
  } else if (const auto* pool = dynamic_cast<const layers::MaxPool2d*>(&layer)) {
    c.kernel = pool->kernel_size();
    c.stride = pool->stride();
    c.forward_flops = y * (c.kernel * c.kernel - 1);
    c.backward_flops = x;
    c.forward_bytes = kF32 * (x + y + y);  // x, y, int32 argmax
    c.backward_bytes = kF32 * (y + y) + dx_bytes;
  } else if (const auto* avg = dynamic_cast<const layers::AvgPool2d*>(&layer)) {
    const layers::AvgPool2dOptions& o = avg->options();
    c.kernel = o.kernel_h;
    c.stride = o.stride_h;
    c.forward_flops = y * o.kernel_h * o.kernel_w;   // the window's sum and the division
    c.backward_flops = y * o.kernel_h * o.kernel_w;  // each share added to the window's cells
    c.forward_bytes = kF32 * (x + y);
    c.backward_bytes = kF32 * y + dx_bytes;
  } else if (c.kind == "Flatten") {
    // a view: no kernel, no bytes
  } else if (c.kind == "ReLU" || c.kind == "Dropout" || c.kind == "GlobalAvgPool") {
    c.forward_flops = x;
    c.backward_flops = x;
    c.forward_bytes = kF32 * (x + y);
    // ReLU's backward reads x and dy; dropout regenerates its mask; the pool reads dy [N, C] only.
    c.backward_bytes = kF32 * (c.kind == "ReLU" ? x + y : y) + dx_bytes;
  } else if (c.kind == "GELU") {
    // erfc and exp per element (counted as ~20 flops each way); backward reads x and dy.
    c.forward_flops = 20 * x;
    c.backward_flops = 25 * x;
    c.forward_bytes = kF32 * (x + y);
    c.backward_bytes = kF32 * (x + y) + dx_bytes;
  } else if (c.kind == "Sigmoid" || c.kind == "Tanh" || c.kind == "SiLU" || c.kind == "HardSigmoid" ||
             c.kind == "HardSwish" || c.kind == "Clip" || c.kind == "LeakyRelu") {
    // The ONNX activations (layers/activation.h): an exp or a few compares per element, counted as 4 flops
    // each way; backward reads x (or y) and dy.
    c.forward_flops = 4 * x;
    c.backward_flops = 4 * x;
    c.forward_bytes = kF32 * (x + y);
    c.backward_bytes = kF32 * (x + y) + dx_bytes;
  } else if (c.kind == "Softmax") {
    // exp, the row's max and sum, a division; backward a row dot product and a multiply-add.
    c.forward_flops = 5 * x;
    c.backward_flops = 4 * x;
    c.forward_bytes = kF32 * (x + y);
    c.backward_bytes = kF32 * (y + y) + dx_bytes;
  } else if (c.kind == "ChannelSlice" || c.kind == "ChannelShuffle") {
    // Copies: no arithmetic; backward copies dy back (zeros elsewhere for a slice).
    c.forward_bytes = kF32 * (x + y);
    c.backward_bytes = kF32 * y + dx_bytes;
  } else if (c.kind == "Mul") {
    c.forward_flops = x;
    c.backward_flops = x;
    c.forward_bytes = kF32 * (x + y);
    c.backward_bytes = kF32 * y + dx_bytes;
  } else if (c.kind == "ChannelAffine") {
    // x * scale + shift: two flops an element; backward dx = dy * scale and the per-channel sums of dy * x
    // and dy (a trained scale reads x again).
    c.forward_flops = 2 * x;
    c.backward_flops = 3 * x;
    c.forward_bytes = kF32 * (x + y + p);
    c.backward_bytes = kF32 * (x + y + 2 * p) + dx_bytes;
  } else {
    ENGINE_FAIL("layer_costs: no cost model for {} '{}'", c.kind, c.path);
  }
  return c;
}

Shape walk(const layers::Layer& layer, const Shape& in, std::vector<LayerCost>& out);

// A GraphOp node (Concat, Split, broadcasting Add/Sub/Mul/Div) or a sum node: one flop per output element
// for the arithmetic ones, and each input and output moved once.
LayerCost graph_op_cost(const std::string& path, std::string_view kind, const std::vector<Shape>& in,
                        const std::vector<Shape>& out) {
  LayerCost c;
  c.path = path;
  c.kind = std::string(kind);
  c.in = in.empty() ? Shape{} : in[0];
  c.out = out.empty() ? Shape{} : out[0];
  double in_elems = 0, out_elems = 0;
  for (const Shape& s : in) in_elems += numel(s);
  for (const Shape& s : out) out_elems += numel(s);
  const bool arithmetic = kind != "Concat" && kind != "Split";
  c.forward_flops = arithmetic ? out_elems : 0.0;
  c.backward_flops = arithmetic ? out_elems * static_cast<double>(in.size()) : 0.0;
  c.forward_bytes = kF32 * (in_elems + out_elems);
  c.backward_bytes = kF32 * (out_elems + in_elems);
  return c;
}

// An imported model's Graph (layers/graph.h): its nodes in order, each value's shape followed from the input.
Shape walk_graph(const layers::Graph& graph, const Shape& in, std::vector<LayerCost>& out) {
  std::vector<Shape> shapes{in};  // value 0: the graph's input
  for (int v = 1; v < graph.num_values(); ++v) {
    Shape s;
    shapes.push_back(graph.constant_values(v, &s) != nullptr ? s : Shape{});
  }
  for (const layers::Graph::NodeView& n : graph.nodes()) {
    std::vector<Shape> ins;
    for (int v : n.inputs) ins.push_back(shapes[static_cast<std::size_t>(v)]);
    ENGINE_CHECK(!ins.empty(), "layer_costs: graph node '{}' has no input", n.name);
    const Shape first = ins[0];
    if (n.layer != nullptr) {
      shapes[static_cast<std::size_t>(n.output)] = walk(*n.layer, first, out);
      continue;
    }
    const std::vector<Shape> outs = n.op != nullptr ? n.op->output_shapes(ins) : std::vector<Shape>{first};
    ENGINE_CHECK(outs.size() == n.outputs.size(),
                 "layer_costs: graph node '{}': {} output shapes for {} outputs", n.name, outs.size(),
                 n.outputs.size());
    for (std::size_t k = 0; k < outs.size(); ++k) shapes[static_cast<std::size_t>(n.outputs[k])] = outs[k];
    out.push_back(graph_op_cost(n.name, n.op != nullptr ? n.op->kind() : "Sum", ins, outs));
  }
  return shapes[static_cast<std::size_t>(graph.output())];
}

// Appends the costs of `layer` run on `in`; returns its output shape.
Shape walk(const layers::Layer& layer, const Shape& in, std::vector<LayerCost>& out) {
  if (const auto* graph = dynamic_cast<const layers::Graph*>(&layer)) return walk_graph(*graph, in, out);
  if (const auto* seq = dynamic_cast<const layers::Sequential*>(&layer)) {
    Shape s = in;
    for (std::size_t i = 0; i < seq->size(); ++i) s = walk(seq->at(i), s, out);
    return s;
  }
  if (const auto* res = dynamic_cast<const layers::Residual*>(&layer)) {
    const Shape a = walk(res->main_branch(), in, out);
    const Shape b = walk(res->shortcut(), in, out);
    ENGINE_CHECK(a == b, "layer_costs: residual branches disagree: {} vs {}", shape_str(a), shape_str(b));
    LayerCost add;
    add.path = layer.path() + ".add";
    add.kind = "ResidualAdd";
    add.in = a;
    add.out = a;
    add.forward_flops = numel(a);
    add.forward_bytes = kF32 * 3 * numel(a);
    add.backward_bytes = kF32 * (res->identity_shortcut() ? 2 : 3) * numel(a);  // identity: da aliases dy
    out.push_back(add);
    // The ReLU after the add: the block's last child.
    const std::vector<layers::NamedChild> children = res->children();
    return walk(*children.back().layer, a, out);
  }
  out.push_back(leaf_cost(layer, in));
  return out.back().out;
}

double sum(const std::vector<LayerCost>& layers, double LayerCost::*field) {
  double s = 0;
  for (const LayerCost& c : layers) s += c.*field;
  return s;
}

}  // namespace

double ModelCost::forward_flops() const { return sum(layers, &LayerCost::forward_flops); }
double ModelCost::backward_flops() const { return sum(layers, &LayerCost::backward_flops); }
double ModelCost::forward_bytes() const { return sum(layers, &LayerCost::forward_bytes); }
double ModelCost::backward_bytes() const { return sum(layers, &LayerCost::backward_bytes); }

ModelCost model_cost(const layers::Model& model, std::int64_t batch) {
  ENGINE_CHECK(batch > 0 && !model.sample_shape().empty(), "model_cost: {} needs a batch and a sample shape",
               model.name());
  ModelCost cost;
  cost.model = model.name();
  cost.batch = batch;
  cost.parameters = model.parameter_count();
  Shape in{batch};
  for (std::int64_t d : model.sample_shape()) in.push_back(d);
  walk(model.root(), in, cost.layers);
  return cost;
}

ModelCost zoo_model_cost(const std::string& name, std::int64_t batch) {
  const bool mnist = name == "mnist_cnn";
  const layers::Model m = layers::build_model(name, mnist ? 1 : 3, 10, mnist ? 28 : 32, mnist ? 28 : 32);
  return model_cost(m, batch);
}

std::string format_model_cost(const ModelCost& cost) {
  std::string s = fmt::format("{} at batch {}: {} parameters\n", cost.model, cost.batch, cost.parameters);
  s += fmt::format("  {:<24} {:<12} {:<20} {:>10} {:>10} {:>9} {:>9}\n", "layer", "kind", "output",
                   "fwd MFLOP", "bwd MFLOP", "fwd MB", "bwd MB");
  for (const LayerCost& c : cost.layers) {
    if (c.kind == "Flatten") continue;
    s += fmt::format("  {:<24} {:<12} {:<20} {:>10.1f} {:>10.1f} {:>9.2f} {:>9.2f}\n", c.path, c.kind,
                     shape_str(c.out), c.forward_flops / 1e6, c.backward_flops / 1e6, c.forward_bytes / 1e6,
                     c.backward_bytes / 1e6);
  }
  const double n = static_cast<double>(cost.batch);
  s += fmt::format(
      "  total: forward {:.3f} GFLOP ({:.2f} MFLOP/image), backward {:.3f} GFLOP ({:.2f} MFLOP/image); "
      "bytes forward {:.1f} MB, backward {:.1f} MB; gradients {:.2f} MB/step; SGD {:.1f} MB/step\n",
      cost.forward_flops() / 1e9, cost.forward_flops() / n / 1e6, cost.backward_flops() / 1e9,
      cost.backward_flops() / n / 1e6, cost.forward_bytes() / 1e6, cost.backward_bytes() / 1e6,
      cost.gradient_bytes() / 1e6, cost.optimizer_bytes() / 1e6);
  return s;
}

}  // namespace engine::bench
