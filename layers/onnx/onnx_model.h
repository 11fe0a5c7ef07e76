#pragma once
// ONNX in and out. Reading builds a trainable Model from an ONNX file: a Graph (layers/graph.h) of the
// engine's own layers, each with its hand-written backward, whose parameters and buffers start from the
// file's initializers under the initializers' names (PyTorch's exporter keeps state-dict names, so the
// checkpoints of such a model load back into the PyTorch module). Writing gives the inverse: a Model in
// inference form (BatchNorm with its running statistics), opset 17, checked by the ONNX checker.
//
// Protobuf stays inside layers/onnx/*.cpp; this header is all the rest of the engine sees. Builds without
// libonnx-dev (cmake/OnnxSetup.cmake) compile layers/onnx/without_onnx.cpp instead: every entry point then
// throws engine::Error saying so, and onnx_available() is false.
//
// What is refused, always before anything runs, with the node's name, op type and attribute: see
// docs/ONNX.md (the supported ops and attributes) and docs/ONNX_CONFORMANCE.md (ONNX's own node tests).

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "layers/model.h"
#include "layers/models.h"

namespace engine::layers::onnx {

// Whether this build reads and writes ONNX.
bool onnx_available();

// Whether `model_name` names an ONNX file (ends in ".onnx") rather than a model of the zoo.
bool is_onnx_path(std::string_view model_name);

// A tensor on the host, in double (ONNX's float, double and integer tensors all fit the engine's use).
struct HostTensor {
  std::vector<double> values;
  Shape shape;
};

struct ImportOptions {
  // The per-sample input [C, H, W] (or [F]) the run feeds; empty: take it from the file (its first input,
  // every dimension but the batch fixed). When both are known they must agree.
  Shape sample_shape;
  // The number of classes the run expects from the output [N, classes]; 0: not checked.
  int num_classes = 0;
  // Graph inputs other than the first, bound to values (ONNX's node tests feed weights as inputs). They
  // act as initializers of those names.
  std::map<std::string, HostTensor> bound_inputs;
  // Graph outputs past the first are left unread instead of refused (ONNX's node tests of
  // BatchNormalization in training mode, MaxPool with indices and Dropout with its mask, which the engine's
  // layers keep inside: those tests compare the first output).
  bool first_output_only = false;
  // How BatchNormalization nodes become layers (dist::SyncBatchNorm2d under --sync-bn); empty: BatchNorm2d.
  BatchNormFactory make_batchnorm;
  // Transfer learning: the file's classifier (the last Linear or 1x1 Conv before the output) replaced by one
  // with num_classes outputs, freshly initialized as PyTorch's (U(-1/sqrt(fan_in), 1/sqrt(fan_in))), its
  // names kept; every other weight is the file's.
  bool new_head = false;
};

// Reads `path` and builds the model (not finalized). Throws engine::Error naming the file, and for a node
// the engine cannot run, the node's name, op type, attribute and what is supported.
Model import_model(const std::string& path, const ImportOptions& options = {});

// The same from the bytes of a file (`what` names it in messages): the fuzz target's entry.
Model import_model_bytes(std::string_view bytes, const std::string& what, const ImportOptions& options = {});

// A TensorProto file (ONNX's test_data_set_*/input_0.pb).
HostTensor read_tensor_file(const std::string& path);

// Writes a finalized model of the engine's layers (a zoo model or an imported one) in inference form:
// opset 17, the first input "input" [N, C, H, W] with a symbolic batch, the output "logits". Runs the ONNX
// checker on the result. Throws engine::Error naming a layer the writer cannot express.
void export_model(const Model& model, const std::string& path);

}  // namespace engine::layers::onnx
