// The ONNX ops the engine trains, each mapped onto an existing layer; everything else is refused naming the
// node, the op or attribute, and what is supported (docs/ONNX.md lists the same).
#include <algorithm>
#include <cmath>
#include <set>
#include <tuple>

#include "core/error.h"
#include "layers/avgpool2d.h"
#include "layers/batchnorm2d.h"
#include "layers/dropout.h"
#include "layers/flatten.h"
#include "layers/gelu.h"
#include "layers/linear.h"
#include "layers/maxpool2d.h"
#include "layers/mul.h"
#include "layers/onnx/onnx_activation.h"
#include "layers/onnx/onnx_attrs.h"
#include "layers/onnx/onnx_builder.h"
#include "layers/relu.h"

namespace engine::layers::onnx::detail {

namespace {

std::int64_t attr_int(const pb::NodeProto& node, const std::string& name, std::int64_t fallback) {
  const pb::AttributeProto* a = node_attr(node, name);
  return a ? a->i() : fallback;
}

double attr_float(const pb::NodeProto& node, const std::string& name, double fallback) {
  const pb::AttributeProto* a = node_attr(node, name);
  return a ? float_as_written(a->f()) : fallback;
}

std::string attr_string(const pb::NodeProto& node, const std::string& name, const std::string& fallback) {
  const pb::AttributeProto* a = node_attr(node, name);
  return a ? a->s() : fallback;
}

std::vector<std::int64_t> attr_ints(const pb::NodeProto& node, const std::string& name) {
  const pb::AttributeProto* a = node_attr(node, name);
  return a ? std::vector<std::int64_t>(a->ints().begin(), a->ints().end()) : std::vector<std::int64_t>{};
}

// Refuses every attribute of the node outside `known`.
void only_attributes(const Builder& b, const pb::NodeProto& node, const std::set<std::string>& known) {
  for (const pb::AttributeProto& a : node.attribute()) {
    if (known.count(a.name()) == 0) b.refuse(node, fmt::format("attribute '{}' is not supported", a.name()));
  }
}

// Outputs past the first (BatchNormalization's running statistics in training mode, MaxPool's indices,
// Dropout's mask) must reach nothing: the engine's layers keep those inside.
void only_first_output(const Builder& b, const pb::NodeProto& node) {
  for (int i = 1; i < node.output_size(); ++i) {
    if (!node.output(i).empty() && b.consumers.count(node.output(i)) > 0) {
      b.refuse(node,
               fmt::format("its output {} '{}' is read by another node; only the first output is supported",
                           i, node.output(i)));
    }
  }
}

// One value for a list attribute that must be the same along both spatial axes (and both sides for pads).
int square(const Builder& b, const pb::NodeProto& node, const std::string& name, int fallback,
           const std::string& supported) {
  const std::vector<std::int64_t> v = attr_ints(node, name);
  if (v.empty()) return fallback;
  for (const std::int64_t x : v) {
    if (x != v[0] || x < 0 || x > 1'000'000) {
      b.refuse(node,
               fmt::format("attribute {} = [{}] is not supported ({})", name, fmt::join(v, ", "), supported));
    }
  }
  return static_cast<int>(v[0]);
}

// auto_pad, and dilations unless the op takes them (Conv reads its own).
void spatial_common(const Builder& b, const pb::NodeProto& node, bool takes_dilations = false) {
  const std::string auto_pad = attr_string(node, "auto_pad", "NOTSET");
  if (auto_pad != "NOTSET" && auto_pad != "VALID" && !is_same_auto_pad(auto_pad)) {
    b.refuse(node, fmt::format("attribute auto_pad = {} is not one of NOTSET, VALID, SAME_UPPER, SAME_LOWER",
                               auto_pad));
  }
  for (const std::int64_t d : attr_ints(node, "dilations")) {
    if (d != 1 && !takes_dilations)
      b.refuse(node, fmt::format("attribute dilations = [{}] is not supported (1 only)",
                                 fmt::join(attr_ints(node, "dilations"), ", ")));
  }
}

// ceil_mode 0 or 1 (the output size rounded down or up, kernels/shapes.h's Pool2dShape::ceil_mode).
bool ceil_mode(const Builder& b, const pb::NodeProto& node) {
  const std::int64_t c = attr_int(node, "ceil_mode", 0);
  if (c != 0 && c != 1) b.refuse(node, fmt::format("attribute ceil_mode = {} is not 0 or 1", c));
  return c == 1;
}

void check_kernel_shape(const Builder& b, const pb::NodeProto& node, int kernel) {
  const std::vector<std::int64_t> ks = attr_ints(node, "kernel_shape");
  if (ks.size() != 2 || ks[0] != ks[1] || (kernel > 0 && ks[0] != kernel)) {
    b.refuse(node, fmt::format("attribute kernel_shape = [{}] is not supported (square 2-d kernels only)",
                               fmt::join(ks, ", ")));
  }
}

void batchnorm(Builder& b, const pb::NodeProto& node) {
  only_attributes(b, node, {"epsilon", "momentum", "training_mode", "spatial"});
  if (attr_int(node, "spatial", 1) != 1) b.refuse(node, "attribute spatial = 0 is not supported");
  only_first_output(b, node);
  const HostTensor& scale = b.weight(node, 1);
  const int c = static_cast<int>(scale.values.size());
  // ONNX's momentum weighs the old running value (0.9); PyTorch's (0.1) the batch's (both as written: 3e-4
  // is 1 - 0.9997, not 1 - float32(0.9997); onnx_attrs.h).
  const double momentum = 1.0 - attr_float(node, "momentum", 0.9);
  const double eps = attr_float(node, "epsilon", 1e-5);
  std::unique_ptr<Layer> layer = b.options().make_batchnorm ? b.options().make_batchnorm(c, eps, momentum)
                                                            : std::make_unique<BatchNorm2d>(c, eps, momentum);
  b.add_layer(node, std::move(layer), node.input(0),
              {{"weight", node.input(1)},
               {"bias", node.input(2)},
               {"running_mean", node.input(3)},
               {"running_var", node.input(4)}},
              {scale, b.weight(node, 2), b.weight(node, 3), b.weight(node, 4)}, node.output(0));
}

void maxpool(Builder& b, const pb::NodeProto& node) {
  only_attributes(b, node,
                  {"kernel_shape", "strides", "pads", "dilations", "auto_pad", "ceil_mode", "storage_order"});
  spatial_common(b, node);
  only_first_output(b, node);
  if (attr_int(node, "storage_order", 0) != 0) b.refuse(node, "attribute storage_order = 1 is not supported");
  check_kernel_shape(b, node, 0);
  const Value& x = b.runtime(node, 0);
  const int k = static_cast<int>(attr_ints(node, "kernel_shape")[0]);
  const int stride = square(b, node, "strides", 1, "equal strides along both axes");
  int pad = square(b, node, "pads", 0, "the same padding on every side");
  if (const std::string same = attr_string(node, "auto_pad", ""); is_same_auto_pad(same)) {
    const auto [ph, pw] = same_pads(b, node, same, x.shape, {k, k}, {stride, stride}, {1, 1});
    if (ph != pw)
      b.refuse(node,
               fmt::format("auto_pad = {} needs pads {} along H and {} along W: unequal", same, ph, pw));
    pad = ph;
  }
  if (2 * pad > k) b.refuse(node, fmt::format("attribute pads = {} is more than half the kernel {}", pad, k));
  b.add_layer(node, std::make_unique<MaxPool2d>(k, stride, pad, ceil_mode(b, node)), node.input(0), {}, {},
              node.output(0));
}

// A list attribute of one value per spatial axis ([h, w]; pads: [h_begin, w_begin, h_end, w_end] with equal
// ends), for the ops that take rectangular windows.
std::pair<int, int> per_axis(const Builder& b, const pb::NodeProto& node, const std::string& name,
                             int fallback) {
  const std::vector<std::int64_t> v = attr_ints(node, name);
  if (v.empty()) return {fallback, fallback};
  const bool pads = name == "pads";
  const bool ok = v.size() == (pads ? 4u : 2u) && (!pads || (v[0] == v[2] && v[1] == v[3])) &&
                  std::all_of(v.begin(), v.end(), [](std::int64_t x) { return x >= 0 && x <= 1'000'000; });
  if (!ok) {
    b.refuse(node, fmt::format("attribute {} = [{}] is not supported ({})", name, fmt::join(v, ", "),
                               pads ? "2-d, the same padding at both ends of an axis" : "2-d"));
  }
  return {static_cast<int>(v[0]), static_cast<int>(v[1])};
}

// AveragePool in floor or ceil mode with symmetric pads: the engine's AvgPool2d (rectangular windows too).
void averagepool(Builder& b, const pb::NodeProto& node) {
  only_attributes(
      b, node,
      {"kernel_shape", "strides", "pads", "auto_pad", "ceil_mode", "count_include_pad", "dilations"});
  spatial_common(b, node);
  const std::vector<std::int64_t> ks = attr_ints(node, "kernel_shape");
  if (ks.size() != 2 || ks[0] < 1 || ks[1] < 1 || ks[0] > 1'000'000 || ks[1] > 1'000'000) {
    b.refuse(node, fmt::format("attribute kernel_shape = [{}] is not supported (2-d kernels only)",
                               fmt::join(ks, ", ")));
  }
  const Value& x = b.runtime(node, 0);
  AvgPool2dOptions o;
  o.kernel_h = static_cast<int>(ks[0]);
  o.kernel_w = static_cast<int>(ks[1]);
  std::tie(o.stride_h, o.stride_w) = per_axis(b, node, "strides", 1);
  if (o.stride_h == 0 || o.stride_w == 0) b.refuse(node, "attribute strides: a stride of 0");
  std::tie(o.pad_h, o.pad_w) = per_axis(b, node, "pads", 0);
  if (const std::string same = attr_string(node, "auto_pad", ""); is_same_auto_pad(same)) {
    std::tie(o.pad_h, o.pad_w) =
        same_pads(b, node, same, x.shape, {o.kernel_h, o.kernel_w}, {o.stride_h, o.stride_w}, {1, 1});
  }
  if (o.pad_h >= o.kernel_h || o.pad_w >= o.kernel_w) {
    b.refuse(node, fmt::format("attribute pads = [{}] is not supported (below the kernel [{}, {}])",
                               fmt::join(attr_ints(node, "pads"), ", "), o.kernel_h, o.kernel_w));
  }
  o.count_include_pad = attr_int(node, "count_include_pad", 0) != 0;
  o.ceil_mode = ceil_mode(b, node);
  if (x.shape.size() != 4 || x.shape[2] + 2 * o.pad_h < o.kernel_h || x.shape[3] + 2 * o.pad_w < o.kernel_w) {
    b.refuse(node, fmt::format("kernel_shape [{}, {}] with pads [{}, {}] does not fit the input {} (an "
                               "input [N, C, H, W] at least as large as the window is)",
                               o.kernel_h, o.kernel_w, o.pad_h, o.pad_w, shape_str(x.shape)));
  }
  b.add_layer(node, std::make_unique<AvgPool2d>(o), node.input(0), {}, {}, node.output(0));
}

void flatten_to_2d(Builder& b, const pb::NodeProto& node) {
  b.runtime(node, 0);
  b.add_layer(node, std::make_unique<Flatten>(), node.input(0), {}, {}, node.output(0));
}

void reshape(Builder& b, const pb::NodeProto& node) {
  only_attributes(b, node, {"allowzero"});
  const Value& x = b.runtime(node, 0);
  if (!b.has(node.input(1)) || !b.value(node, 1).constant) {
    b.refuse(node,
             "a shape computed at run time is not supported (export with a static shape, or use "
             "torch.flatten(x, 1))");
  }
  const HostTensor& shape = b.constant(node, 1);
  const bool batch_first = shape.values.size() == 2 && (shape.values[0] == 0 || shape.values[0] == -1 ||
                                                        shape.values[0] == static_cast<double>(x.shape[0]));
  std::int64_t rest = 1;
  for (std::size_t i = 1; i < x.shape.size(); ++i) rest *= x.shape[i];
  if (!batch_first || !(shape.values[1] == -1 || shape.values[1] == static_cast<double>(rest))) {
    b.refuse(node, fmt::format("shape [{}] is not supported: only [N, -1] (flatten to 2-d) is",
                               fmt::join(shape.values, ", ")));
  }
  b.add_layer(node, std::make_unique<Flatten>(), node.input(0), {}, {}, node.output(0));
}

// Linear from a [out, in] (transposed: false) or [in, out] (transposed: true) weight.
void linear(Builder& b, const pb::NodeProto& node, const HostTensor& w, bool transposed,
            const std::string& wname, const HostTensor* bias, const std::string& bname,
            const std::string& output) {
  if (w.shape.size() != 2)
    b.refuse(node, fmt::format("weight '{}' {} is not 2-d", wname, shape_str(w.shape)));
  const Value& x = b.runtime(node, 0);
  if (x.shape.size() != 2) {
    b.refuse(node, fmt::format("input {} is not supported: only 2-d inputs [N, features] (flatten first)",
                               shape_str(x.shape)));
  }
  const std::int64_t in = transposed ? w.shape[0] : w.shape[1], out = transposed ? w.shape[1] : w.shape[0];
  HostTensor weight{w.values, {out, in}};
  if (transposed) {
    for (std::int64_t i = 0; i < in; ++i)
      for (std::int64_t o = 0; o < out; ++o)
        weight.values[static_cast<std::size_t>(o * in + i)] = w.values[static_cast<std::size_t>(i * out + o)];
  }
  std::vector<std::pair<std::string, std::string>> params{{"weight", wname}};
  std::vector<HostTensor> values{weight};
  if (bias != nullptr) {
    if (bias->values.size() != static_cast<std::size_t>(out) ||
        (bias->shape.size() == 2 && bias->shape[0] != 1)) {
      b.refuse(node, fmt::format("bias '{}' {} is not supported: a bias of {} values ([{}] or [1, {}]) is",
                                 bname, shape_str(bias->shape), out, out, out));
    }
    params.emplace_back("bias", bname);
    values.push_back(HostTensor{bias->values, {out}});
  }
  b.add_layer(node, std::make_unique<Linear>(static_cast<int>(in), static_cast<int>(out), bias != nullptr),
              node.input(0), params, values, output);
}

void gemm(Builder& b, const pb::NodeProto& node) {
  only_attributes(b, node, {"alpha", "beta", "transA", "transB"});
  for (const char* a : {"alpha", "beta"}) {
    if (attr_float(node, a, 1.0) != 1.0) {
      b.refuse(node, fmt::format("attribute {} = {} is not supported (1 only)", a, attr_float(node, a, 1.0)));
    }
  }
  if (attr_int(node, "transA", 0) != 0) b.refuse(node, "attribute transA = 1 is not supported (0 only)");
  const bool has_bias = b.has_bias(node, 2);
  const HostTensor& w = b.weight(node, 1);
  linear(b, node, w, attr_int(node, "transB", 0) == 0, node.input(1), has_bias ? &b.weight(node, 2) : nullptr,
         has_bias ? node.input(2) : "", node.output(0));
}

// MatMul by a constant [in, out], and the Add of a constant [out] after it (PyTorch's nn.Linear on inputs
// that are not 2-d, or the exporter's choice).
void matmul(Builder& b, const pb::NodeProto& node) {
  only_attributes(b, node, {});
  const HostTensor& w = b.weight(node, 1);
  const auto it = b.consumers.find(node.output(0));
  if (it != b.consumers.end() && it->second.size() == 1 && it->second[0]->op_type() == "Add") {
    const pb::NodeProto& add = *it->second[0];
    const int other = add.input(0) == node.output(0) ? 1 : 0;
    if (b.has(add.input(other)) && b.value(add, other).constant) {
      b.consumed.insert(&add);
      linear(b, node, w, true, node.input(1), &b.weight(add, other), add.input(other), add.output(0));
      return;
    }
  }
  linear(b, node, w, true, node.input(1), nullptr, "", node.output(0));
}

}  // namespace

void convert_elementwise(Builder& b, const pb::NodeProto& node);  // onnx_ops_elementwise.cpp
void convert_conv(Builder& b, const pb::NodeProto& node);         // onnx_ops_conv.cpp

std::string supported_ops() {
  return "Conv (group, dilations, rectangular kernels), BatchNormalization, Relu, Gelu (and its Erf form), "
         "MaxPool, AveragePool "
         "(floor or ceil mode), GlobalAveragePool, Flatten, Reshape [N, -1], Gemm, MatMul (+ Add), Add, Add "
         "and Mul by a scalar or per-channel constant, Div by a scalar constant, Dropout, Identity, "
         "Constant, "
         "Concat and Split (SplitToSequence + SequenceAt too) and Slice on channels, Add/Sub/Mul/Div with "
         "broadcasting, ReduceMean over [2, 3], channel shuffle (Reshape, Transpose, Reshape), and shape "
         "subgraphs (Shape, Gather, Unsqueeze, Squeeze, Concat, Expand, Cast, CastLike, Slice, Reshape of "
         "constants) folded at import, Sigmoid (and Sigmoid then Mul: SiLU), Tanh, HardSigmoid, HardSwish, "
         "Clip by constants, LeakyRelu, Softmax over the classes of [N, classes] (a model ending in it "
         "trains "
         "on probabilities under the loss, as PyTorch's CrossEntropyLoss after a Softmax)";
}

void convert_node(Builder& b, const pb::NodeProto& node) {
  if (!node.domain().empty() && node.domain() != "ai.onnx") {
    b.refuse(node, fmt::format("domain '{}' is not supported (the default ONNX domain only)", node.domain()));
  }
  if (convert_channels_last(b, node)) return;  // onnx_ops_channels_last.cpp
  if (convert_graph_node(b, node)) return;
  const std::string& op = node.op_type();
  if (op == "Conv") return convert_conv(b, node);  // onnx_ops_conv.cpp
  if (op == "BatchNormalization") return batchnorm(b, node);
  if (op == "MaxPool") return maxpool(b, node);
  if (op == "AveragePool") return averagepool(b, node);
  if (op == "Flatten") {
    only_attributes(b, node, {"axis"});
    if (attr_int(node, "axis", 1) != 1) {
      b.refuse(node, fmt::format("attribute axis = {} is not supported (1 only)", attr_int(node, "axis", 1)));
    }
    return flatten_to_2d(b, node);
  }
  if (op == "Reshape") return reshape(b, node);
  if (op == "Gemm") return gemm(b, node);
  if (op == "MatMul") return matmul(b, node);
  if (op == "Relu") {
    only_attributes(b, node, {});
    b.runtime(node, 0);
    return b.add_layer(node, std::make_unique<ReLU>(), node.input(0), {}, {}, node.output(0));
  }
  if (op == "Gelu") {
    only_attributes(b, node, {"approximate"});
    if (attr_string(node, "approximate", "none") != "none") {
      b.refuse(node, fmt::format("attribute approximate = {} is not supported (none: the exact erf form)",
                                 attr_string(node, "approximate", "none")));
    }
    b.runtime(node, 0);
    return b.add_layer(node, std::make_unique<GELU>(), node.input(0), {}, {}, node.output(0));
  }
  if (convert_activation(b, node)) return;  // onnx_ops_activation.cpp
  if (convert_softmax(b, node)) return;     // onnx_ops_softmax.cpp
  return convert_elementwise(b, node);
}

}  // namespace engine::layers::onnx::detail
