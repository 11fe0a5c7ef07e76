// Fuzzes the ONNX importer (layers/onnx/: cnn_train --model FILE.onnx, cnn_predict): protobuf parsing, the
// opset and graph checks, the initializers' values, the input's shape and every node's conversion into the
// engine's layers. An engine::Error naming the file is the expected answer to bad bytes.

#include <cstdint>
#include <string_view>

#include "core/error.h"
#include "layers/onnx/onnx_model.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const engine::layers::Model model = engine::layers::onnx::import_model_bytes(
        std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.onnx");
    if (model.name() != "fuzz.onnx") __builtin_trap();
  } catch (const engine::Error&) {
  }
  return 0;
}
