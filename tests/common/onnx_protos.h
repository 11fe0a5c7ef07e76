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

// A float attribute `name` = v on node `n`.
inline void add_float_attribute(::onnx::NodeProto& n, const std::string& name, float v) {
  ::onnx::AttributeProto& a = *n.add_attribute();
  a.set_name(name);
  a.set_type(::onnx::AttributeProto::FLOAT);
  a.set_f(v);
}

// Starts model `m` (IR 8, `opset`) with the float input "x" [N, sample...]; returns its graph.
inline ::onnx::GraphProto& start_model(::onnx::ModelProto& m, int opset,
                                       const std::vector<std::int64_t>& sample) {
  m.set_ir_version(8);
  m.add_opset_import()->set_version(opset);
  ::onnx::GraphProto& g = *m.mutable_graph();
  ::onnx::ValueInfoProto& x = *g.add_input();
  x.set_name("x");
  auto* type = x.mutable_type()->mutable_tensor_type();
  type->set_elem_type(::onnx::TensorProto::FLOAT);
  type->mutable_shape()->add_dim()->set_dim_param("N");
  for (const std::int64_t d : sample) type->mutable_shape()->add_dim()->set_dim_value(d);
  return g;
}

}  // namespace engine::testing
