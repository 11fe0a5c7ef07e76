#pragma once
// Internal to layers/onnx/: reading a node's attributes, for the conversions outside onnx_ops.cpp.

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

inline std::int64_t node_int(const pb::NodeProto& node, const std::string& name, std::int64_t fallback) {
  const pb::AttributeProto* a = node_attr(node, name);
  return a ? a->i() : fallback;
}

inline std::vector<std::int64_t> node_ints(const pb::NodeProto& node, const std::string& name) {
  const pb::AttributeProto* a = node_attr(node, name);
  return a ? std::vector<std::int64_t>(a->ints().begin(), a->ints().end()) : std::vector<std::int64_t>{};
}

}  // namespace engine::layers::onnx::detail
