#pragma once
// Internal to layers/onnx/: onnx.proto's classes (Debian's libonnx-dev) and the checked conversions the
// importer and the exporter share. Nothing outside layers/onnx/ includes this.

#include <cstdint>
#include <onnx/onnx_pb.h>
#include <string>
#include <string_view>

#include "layers/onnx/onnx_model.h"

namespace engine::layers::onnx::detail {

namespace pb = ::onnx;

// The newest default-domain opset the importer knows, and the oldest (older Conv/BatchNormalization/Dropout
// had other attributes).
inline constexpr std::int64_t kMaxOpset = 20;
inline constexpr std::int64_t kMinOpset = 9;
// The newest opset Debian's ONNX 1.12 checker knows: newer models are read without the checker.
inline constexpr std::int64_t kCheckerMaxOpset = 17;

// Parses a ModelProto; throws naming `what` for an empty, truncated or non-ONNX input.
pb::ModelProto parse_model(std::string_view bytes, const std::string& what);
// The default domain's opset of the model (throws when it has none).
std::int64_t default_opset(const pb::ModelProto& model, const std::string& what);
// Runs ONNX's checker where it knows the opset; returns a note saying whether it ran.
std::string run_checker(const pb::ModelProto& model, const std::string& what);

// The values of a tensor (float, double, int32, int64, bool, uint8, int8 in its typed field or raw_data);
// throws naming `what` when the data disagrees with the dims, the type is another, or the data is external.
HostTensor tensor_values(const pb::TensorProto& t, const std::string& what);
// A float tensor named `name` holding `t`'s values.
pb::TensorProto make_tensor(const std::string& name, const HostTensor& t);

}  // namespace engine::layers::onnx::detail
