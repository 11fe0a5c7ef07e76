#pragma once
// Builders for the hand-made ONNX files of the importer's tests (onnx.proto's classes; include only where
// ENGINE_HAVE_ONNX is set).

#include <cstdint>
#include <functional>
#include <onnx/onnx_pb.h>
#include <string>
#include <vector>

namespace engine::testing {

// A float initializer `name` of shape `dims`, element i = value(i).
inline void add_float_initializer(::onnx::GraphProto& g, const std::string& name,
                                  const std::vector<std::int64_t>& dims,
                                  const std::function<float(int)>& value) {
  ::onnx::TensorProto& t = *g.add_initializer();
  t.set_name(name);
  t.set_data_type(::onnx::TensorProto::FLOAT);
  std::int64_t count = 1;
  for (const std::int64_t d : dims) {
    t.add_dims(d);
    count *= d;
  }
  for (int i = 0; i < static_cast<int>(count); ++i) t.add_float_data(value(i));
}

// A node `name` running `op` on `in`, writing `out`.
inline ::onnx::NodeProto& add_node(::onnx::GraphProto& g, const std::string& op, const std::string& name,
                                   const std::vector<std::string>& in, const std::string& out) {
  ::onnx::NodeProto& n = *g.add_node();
  n.set_op_type(op);
  n.set_name(name);
  for (const std::string& s : in) n.add_input(s);
  n.add_output(out);
  return n;
}

}  // namespace engine::testing
