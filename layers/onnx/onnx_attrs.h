#pragma once
// Internal to layers/onnx/: reading a node's attributes, for the conversions outside onnx_ops.cpp.

#include <charconv>
#include <cstdint>
#include <string>
#include <vector>

#include "layers/onnx/onnx_proto.h"

namespace engine::layers::onnx::detail {

inline const pb::AttributeProto* node_attr(const pb::NodeProto& node, const std::string& name) {
  for (const pb::AttributeProto& a : node.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

// The value a float32 attribute was written from: the shortest decimal that rounds to it, read as a double.
// Exporters store doubles as float32: PyTorch writes BatchNorm's momentum 3e-4 (MNASNet's) as the float32
// of 1 - 3e-4, whose complement in double is 2.9999018e-4, 3.3e-5 off (every running statistic after a step
// by as much, 100 times PyTorch float32's own error there); read as 0.9997 it gives back 1 - 0.9997 as
// PyTorch computes it. A float32 value that no shorter decimal gives keeps all its digits (the same value).
inline double float_as_written(float f) {
  char digits[32];
  const auto written = std::to_chars(digits, digits + sizeof digits, f);  // shortest round trip
  double d = static_cast<double>(f);
  std::from_chars(digits, written.ptr, d);
  return d;
}

inline std::int64_t node_int(const pb::NodeProto& node, const std::string& name, std::int64_t fallback) {
  const pb::AttributeProto* a = node_attr(node, name);
  return a ? a->i() : fallback;
}

inline std::vector<std::int64_t> node_ints(const pb::NodeProto& node, const std::string& name) {
  const pb::AttributeProto* a = node_attr(node, name);
  return a ? std::vector<std::int64_t>(a->ints().begin(), a->ints().end()) : std::vector<std::int64_t>{};
}

}  // namespace engine::layers::onnx::detail
