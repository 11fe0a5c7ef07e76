#include "layers/onnx/onnx_proto.h"

#include <cstring>
#include <limits>
#include <onnx/checker.h>

#include "core/error.h"

namespace engine::layers::onnx::detail {

pb::ModelProto parse_model(std::string_view bytes, const std::string& what) {
  ENGINE_CHECK(!bytes.empty(), "ONNX model '{}': the file is empty", what);
  ENGINE_CHECK(bytes.size() < static_cast<std::size_t>(std::numeric_limits<int>::max()),
               "ONNX model '{}': {} bytes is more than protobuf reads (2 GiB)", what, bytes.size());
  pb::ModelProto model;
  ENGINE_CHECK(model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())),
               "ONNX model '{}': not an ONNX model, or truncated (protobuf cannot parse its {} bytes)", what,
               bytes.size());
  ENGINE_CHECK(model.has_graph() && model.graph().node_size() > 0,
               "ONNX model '{}': no graph, or a graph without nodes (is it an ONNX model?)", what);
  return model;
}

std::int64_t default_opset(const pb::ModelProto& model, const std::string& what) {
  for (const pb::OperatorSetIdProto& id : model.opset_import()) {
    if (id.domain().empty() || id.domain() == "ai.onnx") return id.version();
  }
  ENGINE_FAIL("ONNX model '{}': imports no default-domain opset", what);
}

std::string run_checker(const pb::ModelProto& model, const std::string& what) {
  const std::int64_t opset = default_opset(model, what);
  if (opset > kCheckerMaxOpset) {
    return fmt::format("ONNX checker not run: opset {} is newer than this ONNX library's checker knows ({})",
                       opset, kCheckerMaxOpset);
  }
  try {
    ::onnx::checker::check_model(model);
  } catch (const std::exception& e) {
    ENGINE_FAIL("ONNX model '{}': the ONNX checker refuses it: {}", what, e.what());
  }
  return fmt::format("ONNX checker passed (opset {})", opset);
}

namespace {

template <typename T>
void from_raw(const std::string& raw, std::vector<double>& out) {
  const std::size_t n = raw.size() / sizeof(T);
  out.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    T v;
    std::memcpy(&v, raw.data() + i * sizeof(T), sizeof(T));
    out[i] = static_cast<double>(v);
  }
}

std::size_t element_size(int type) {
  switch (type) {
    case pb::TensorProto::FLOAT:
    case pb::TensorProto::INT32: return 4;
    case pb::TensorProto::DOUBLE:
    case pb::TensorProto::INT64: return 8;
    case pb::TensorProto::BOOL:
    case pb::TensorProto::UINT8:
    case pb::TensorProto::INT8: return 1;
    default: return 0;
  }
}

}  // namespace

HostTensor tensor_values(const pb::TensorProto& t, const std::string& what) {
  HostTensor out;
  std::int64_t numel = 1;
  for (const std::int64_t d : t.dims()) {
    ENGINE_CHECK(d >= 0 && d <= (std::int64_t{1} << 31), "{}: dimension {} is out of range", what, d);
    out.shape.push_back(d);
    numel *= d;
    ENGINE_CHECK(numel <= (std::int64_t{1} << 31), "{}: more than 2^31 elements", what);
  }
  ENGINE_CHECK(t.data_location() != pb::TensorProto::EXTERNAL,
               "{}: the data is in an external file, which the importer does not read (export with the data "
               "inside the model: a model under 2 GiB)",
               what);
  const int type = t.data_type();
  const std::size_t size = element_size(type);
  ENGINE_CHECK(size > 0, "{}: data type {} ({}) is not supported (float, double and integer tensors are)",
               what, type, pb::TensorProto::DataType_Name(static_cast<pb::TensorProto::DataType>(type)));
  if (t.has_raw_data()) {
    ENGINE_CHECK(t.raw_data().size() == static_cast<std::size_t>(numel) * size,
                 "{}: {} bytes of data for shape {} of {} ({} bytes expected)", what, t.raw_data().size(),
                 shape_str(out.shape),
                 pb::TensorProto::DataType_Name(static_cast<pb::TensorProto::DataType>(type)),
                 static_cast<std::size_t>(numel) * size);
    switch (type) {
      case pb::TensorProto::FLOAT: from_raw<float>(t.raw_data(), out.values); break;
      case pb::TensorProto::DOUBLE: from_raw<double>(t.raw_data(), out.values); break;
      case pb::TensorProto::INT32: from_raw<std::int32_t>(t.raw_data(), out.values); break;
      case pb::TensorProto::INT64: from_raw<std::int64_t>(t.raw_data(), out.values); break;
      case pb::TensorProto::INT8: from_raw<std::int8_t>(t.raw_data(), out.values); break;
      default: from_raw<std::uint8_t>(t.raw_data(), out.values); break;
    }
  } else {
    switch (type) {
      case pb::TensorProto::FLOAT: out.values.assign(t.float_data().begin(), t.float_data().end()); break;
      case pb::TensorProto::DOUBLE: out.values.assign(t.double_data().begin(), t.double_data().end()); break;
      case pb::TensorProto::INT64: out.values.assign(t.int64_data().begin(), t.int64_data().end()); break;
      default: out.values.assign(t.int32_data().begin(), t.int32_data().end()); break;
    }
    ENGINE_CHECK(static_cast<std::int64_t>(out.values.size()) == numel,
                 "{}: {} values for shape {} ({} expected)", what, out.values.size(), shape_str(out.shape),
                 numel);
  }
  return out;
}

pb::TensorProto make_tensor(const std::string& name, const HostTensor& t) {
  pb::TensorProto out;
  out.set_name(name);
  out.set_data_type(pb::TensorProto::FLOAT);
  for (const std::int64_t d : t.shape) out.add_dims(d);
  std::string raw(t.values.size() * sizeof(float), '\0');
  for (std::size_t i = 0; i < t.values.size(); ++i) {
    const auto v = static_cast<float>(t.values[i]);
    std::memcpy(raw.data() + i * sizeof(float), &v, sizeof(float));
  }
  out.set_raw_data(std::move(raw));
  return out;
}

}  // namespace engine::layers::onnx::detail
