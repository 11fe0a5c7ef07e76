// ONNX's Conv as the engine's Conv2d: 2-d, square or rectangular kernels (inception_v3's 1x7 and 7x1), a
// stride and a padding per axis (pads [top, left, bottom, right], each axis padded alike at both ends),
// groups, one dilation for both axes, auto_pad.
#include <algorithm>
#include <array>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "layers/conv2d.h"
#include "layers/onnx/onnx_attrs.h"
#include "layers/onnx/onnx_builder.h"

namespace engine::layers::onnx::detail {

namespace {

constexpr std::int64_t kMaxAttr = 1'000'000;

// A per-axis list attribute {h, w} (kernel_shape, strides, dilations): two values, `fallback` when absent.
std::array<int, 2> per_axis(const Builder& b, const pb::NodeProto& node, const std::string& name,
                            int fallback) {
  const std::vector<std::int64_t> v = node_ints(node, name);
  if (!node_attr(node, name)) return {fallback, fallback};
  if (v.size() != 2 || std::min(v[0], v[1]) < 1 || std::max(v[0], v[1]) > kMaxAttr) {
    b.refuse(node, fmt::format("attribute {} = [{}] is not supported (two positive values: height, width)",
                               name, fmt::join(v, ", ")));
  }
  return {static_cast<int>(v[0]), static_cast<int>(v[1])};
}

// pads [top, left, bottom, right] as {h, w}: the layers pad both ends of an axis alike.
std::array<int, 2> conv_pads(const Builder& b, const pb::NodeProto& node) {
  const std::vector<std::int64_t> v = node_ints(node, "pads");
  if (!node_attr(node, "pads")) return {0, 0};
  if (v.size() != 4 || v[0] != v[2] || v[1] != v[3] || *std::min_element(v.begin(), v.end()) < 0 ||
      *std::max_element(v.begin(), v.end()) > kMaxAttr) {
    b.refuse(node, fmt::format("attribute pads = [{}] is not supported (top, left, bottom, right: each axis "
                               "padded alike at both ends)",
                               fmt::join(v, ", ")));
  }
  return {static_cast<int>(v[0]), static_cast<int>(v[1])};
}

// The pads {h, w}: auto_pad's (NOTSET: the pads attribute; VALID: none; SAME_*: onnx_auto_pad.cpp's).
std::array<int, 2> padding(const Builder& b, const pb::NodeProto& node, const Shape& x,
                           const std::array<int, 2>& kernel, const std::array<int, 2>& stride, int dilation) {
  const pb::AttributeProto* a = node_attr(node, "auto_pad");
  const std::string auto_pad = a ? a->s() : "NOTSET";
  if (auto_pad == "NOTSET") return conv_pads(b, node);
  if (auto_pad == "VALID") return {0, 0};
  if (!is_same_auto_pad(auto_pad)) {
    b.refuse(node, fmt::format("attribute auto_pad = {} is not one of NOTSET, VALID, SAME_UPPER, SAME_LOWER",
                               auto_pad));
  }
  const auto [ph, pw] = same_pads(b, node, auto_pad, x, kernel, stride, {dilation, dilation});
  return {ph, pw};
}

}  // namespace

void convert_conv(Builder& b, const pb::NodeProto& node) {
  for (const pb::AttributeProto& a : node.attribute()) {
    static const std::array<std::string, 6> known{"kernel_shape", "strides", "pads",
                                                  "dilations",    "group",   "auto_pad"};
    if (std::find(known.begin(), known.end(), a.name()) == known.end())
      b.refuse(node, fmt::format("attribute '{}' is not supported", a.name()));
  }
  const std::int64_t group = node_int(node, "group", 1);
  const HostTensor& w = b.weight(node, 1);
  if (group < 1 || w.shape.empty() || w.shape[0] % group != 0) {
    b.refuse(node, fmt::format("attribute group = {} does not divide the weight's {} output channels", group,
                               w.shape.empty() ? 0 : w.shape[0]));
  }
  if (w.shape.size() != 4) {
    b.refuse(node, fmt::format("weight '{}' {} is not supported (2-d convolutions only)", node.input(1),
                               shape_str(w.shape)));
  }
  const std::array<int, 2> kernel{static_cast<int>(w.shape[2]), static_cast<int>(w.shape[3])};
  if (node_attr(node, "kernel_shape") && per_axis(b, node, "kernel_shape", 0) != kernel) {
    b.refuse(node, fmt::format("attribute kernel_shape = [{}] is not the weight '{}' {}'s {}x{}",
                               fmt::join(node_ints(node, "kernel_shape"), ", "), node.input(1),
                               shape_str(w.shape), kernel[0], kernel[1]));
  }
  const std::array<int, 2> dilation = per_axis(b, node, "dilations", 1);
  if (dilation[0] != dilation[1]) {
    b.refuse(node, fmt::format("attribute dilations = [{}, {}] is not supported (equal dilations along both "
                               "axes)",
                               dilation[0], dilation[1]));
  }
  const std::array<int, 2> stride = per_axis(b, node, "strides", 1);
  const Value& x = b.runtime(node, 0);
  const std::array<int, 2> pads = padding(b, node, x.shape, kernel, stride, dilation[0]);

  Conv2dOptions o;
  o.out_channels = static_cast<int>(w.shape[0]);
  o.groups = static_cast<int>(group);
  o.in_channels = static_cast<int>(w.shape[1] * group);  // the weight holds in / group channels
  o.dilation = dilation[0];
  o.kernel_size = kernel[0];
  o.stride = stride[0];
  o.padding = pads[0];
  if (kernel[1] != kernel[0]) o.kernel_w = kernel[1];  // rectangular (layers/conv2d.h)
  if (stride[1] != stride[0]) o.stride_w = stride[1];
  if (pads[1] != pads[0]) o.padding_w = pads[1];
  o.bias = b.has_bias(node, 2);
  if (x.shape.size() == 4 && x.shape[1] != o.in_channels) {
    b.refuse(node, fmt::format("weight '{}' {} needs {} input channels, the input has {}", node.input(1),
                               shape_str(w.shape), o.in_channels, x.shape[1]));
  }
  std::vector<std::pair<std::string, std::string>> params{{"weight", node.input(1)}};
  std::vector<HostTensor> values{w};
  if (o.bias) {
    params.emplace_back("bias", node.input(2));
    values.push_back(b.weight(node, 2));
  }
  b.add_layer(node, std::make_unique<Conv2d>(o), node.input(0), params, values, node.output(0));
}

}  // namespace engine::layers::onnx::detail
