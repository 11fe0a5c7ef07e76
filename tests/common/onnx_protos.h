#pragma once
// Builders for the hand-made ONNX files of the importer's tests, and their import (onnx.proto's classes).
// Include it in any build: without ENGINE_HAVE_ONNX it holds only SKIP_WITHOUT_ONNX and OnnxTest
// (tests/common/onnx_skip.h), and the tests that build files sit inside #if ENGINE_HAVE_ONNX.

#include "tests/common/onnx_skip.h"

#if ENGINE_HAVE_ONNX
#include <cstdint>
#include <functional>
#include <onnx/onnx_pb.h>
#include <string>
#include <vector>

#include "layers/onnx/onnx_model.h"
#include "tests/common/error_of.h"

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

// A float initializer `name` holding the scalar v (no dims).
inline void add_float_scalar(::onnx::GraphProto& g, const std::string& name, float v) {
  add_float_initializer(g, name, {}, [v](int) { return v; });
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

// An int attribute `name` = v on node `n`.
inline void add_int_attribute(::onnx::NodeProto& n, const std::string& name, std::int64_t v) {
  ::onnx::AttributeProto& a = *n.add_attribute();
  a.set_name(name);
  a.set_type(::onnx::AttributeProto::INT);
  a.set_i(v);
}

// An ints attribute `name` = v on node `n`.
inline void add_ints_attribute(::onnx::NodeProto& n, const std::string& name,
                               const std::vector<std::int64_t>& v) {
  ::onnx::AttributeProto& a = *n.add_attribute();
  a.set_name(name);
  a.set_type(::onnx::AttributeProto::INTS);
  for (const std::int64_t x : v) a.add_ints(x);
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

// The model the importer builds from `m` (as the file "m.onnx").
inline layers::Model import_proto(const ::onnx::ModelProto& m,
                                  const layers::onnx::ImportOptions& options = {}) {
  return layers::onnx::import_model_bytes(m.SerializeAsString(), "m.onnx", options);
}

// The message of the engine::Error importing `m` throws, or "(no error)".
inline std::string import_proto_error(const ::onnx::ModelProto& m,
                                      const layers::onnx::ImportOptions& options = {}) {
  const std::string bytes = m.SerializeAsString();
  return error_of([&] { layers::onnx::import_model_bytes(bytes, "m.onnx", options); });
}

}  // namespace engine::testing
#endif  // ENGINE_HAVE_ONNX
