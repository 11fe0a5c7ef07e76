// The ONNX entry points of a build without libonnx-dev (cmake/OnnxSetup.cmake): each says so.
#include <algorithm>
#include <cctype>

#include "core/error.h"
#include "layers/onnx/onnx_model.h"

namespace engine::layers::onnx {

namespace {
[[noreturn]] void unavailable(const std::string& what) {
  ENGINE_FAIL(
      "{}: this build has no ONNX support (configure found no libonnx-dev/libprotobuf-dev; "
      "scripts/install-deps.sh installs them, then reconfigure)",
      what);
}
}  // namespace

bool onnx_available() { return false; }

bool is_onnx_path(std::string_view model_name) {  // .onnx in any case (my_net.ONNX)
  if (model_name.size() <= 5) return false;
  std::string_view ext = model_name.substr(model_name.size() - 5);
  return std::equal(ext.begin(), ext.end(), ".onnx",
                    [](char a, char b) { return std::tolower(static_cast<unsigned char>(a)) == b; });
}

Model import_model(const std::string& path, const ImportOptions&) { unavailable(path); }
Model import_model_bytes(std::string_view, const std::string& what, const ImportOptions&) {
  unavailable(what);
}
HostTensor read_tensor_file(const std::string& path) { unavailable(path); }
void export_model(const Model& model, const std::string& path) {
  unavailable(path + " (" + model.name() + ")");
}

}  // namespace engine::layers::onnx
