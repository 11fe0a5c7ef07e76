#pragma once
// ONNX's own node tests (Debian's libonnx-testdata: data/node/test_*/model.onnx with test_data_set_*/
// input_*.pb and output_*.pb) run through the importer on any device: the CPU test (float32 and the float64
// reference) and the GPU test share this. Every test whose nodes are all ops the engine implements is run;
// each passes, or is refused with the importer's message (the attribute or shape named), or is listed as not
// comparable (training-mode dropout: numpy's random mask). Nothing is skipped silently.
//
// Inputs past the first are bound as constants (ImportOptions::bound_inputs): the node tests feed weights
// as graph inputs. Tolerance: the expected outputs are float32 results of numpy; the engine's may differ by
// the float32 roundings of a reduction (at most 75 terms here) on either side: |got - want| <=
// 128 * 2^-23 * max(1, max |want|), the output's scale times 128 float32 roundings.

#if ENGINE_HAVE_ONNX
#include <onnx/onnx_pb.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/error.h"
#include "core/execution_context.h"
#include "layers/onnx/onnx_model.h"
#include "layers/softmax_cross_entropy.h"

namespace engine::testing {

// Debian's libonnx-testdata, or ENGINE_ONNX_NODE_TESTS (the GPU machine has no Debian packages: its copy
// travels in .deps, scripts/fetch-gpu-deps.sh, and scripts/gpu-build-env.sh names it).
inline std::string onnx_node_test_dir() {
  const char* dir = std::getenv("ENGINE_ONNX_NODE_TESTS");
  return dir != nullptr && *dir != '\0' ? dir : "/usr/share/libonnx-testdata/data/node";
}

struct OnnxNodeCase {
  std::string name;
  std::filesystem::path dir;
  std::vector<std::string> inputs;  // the graph's inputs, in order
  bool training = false;            // BatchNormalization training_mode=1, or Dropout's training_mode input
  bool random = false;              // training-mode Dropout with a ratio above 0: numpy's random mask
};

// The node tests whose nodes are all ops of docs/ONNX_CONFORMANCE.md, by name.
inline std::vector<OnnxNodeCase> onnx_engine_cases() {
  std::vector<OnnxNodeCase> out;
#if ENGINE_HAVE_ONNX
  namespace fs = std::filesystem;
  static const std::set<std::string> kEngineOps = {"Conv",
                                                   "BatchNormalization",
                                                   "Relu",
                                                   "Gelu",
                                                   "MaxPool",
                                                   "AveragePool",
                                                   "GlobalAveragePool",
                                                   "Flatten",
                                                   "Reshape",
                                                   "Gemm",
                                                   "MatMul",
                                                   "Add",
                                                   "Mul",
                                                   "Div",
                                                   "Dropout",
                                                   "Identity",
                                                   "Concat",
                                                   "Split",
                                                   "Slice",
                                                   "Sub",
                                                   "ReduceMean",
                                                   "Shape",
                                                   "Gather",
                                                   "Unsqueeze",
                                                   "Squeeze",
                                                   "Expand",
                                                   "Transpose",
                                                   "Sigmoid",
                                                   "Tanh",
                                                   "HardSigmoid",
                                                   "HardSwish",
                                                   "Clip",
                                                   "LeakyRelu",
                                                   "Softmax",
                                                   "SoftmaxCrossEntropyLoss"};
  const std::string node_tests = onnx_node_test_dir();
  if (!fs::is_directory(node_tests)) return out;
  for (const fs::directory_entry& e : fs::directory_iterator(node_tests)) {
    ::onnx::ModelProto m;
    std::ifstream f(e.path() / "model.onnx", std::ios::binary);
    if (!f.good() || !m.ParseFromIstream(&f)) continue;
    bool ours = m.graph().node_size() > 0;
    OnnxNodeCase c{e.path().filename().string(), e.path(), {}, false, false};
    for (const ::onnx::NodeProto& n : m.graph().node()) {
      ours = ours && kEngineOps.count(n.op_type()) > 0;
      for (const ::onnx::AttributeProto& a : n.attribute())
        c.training |= a.name() == "training_mode" && a.i() == 1;
      c.training |= n.op_type() == "Dropout" && n.input_size() > 2;
    }
    for (const ::onnx::ValueInfoProto& v : m.graph().input()) c.inputs.push_back(v.name());
    // Training-mode dropout's expected output holds numpy's random mask, which no other generator draws
    // (the engine's Philox mask has its own tests: tests/cpu/dropout_test.cpp); the zero-ratio case is kept.
    c.random = c.training && c.name.find("dropout") != std::string::npos &&
               c.name.find("zero_ratio") == std::string::npos;
    if (ours) out.push_back(std::move(c));
  }
  std::sort(out.begin(), out.end(),
            [](const OnnxNodeCase& a, const OnnxNodeCase& b) { return a.name < b.name; });
#endif
  return out;
}

// What differs between `got` and `want` (data set `set`), "" when within the tolerance.
inline std::string onnx_output_diff(int set, const std::vector<double>& got,
                                    const std::vector<double>& want) {
  if (got.size() != want.size())
    return fmt::format("data set {}: {} values, {} expected", set, got.size(), want.size());
  double scale = 1.0;
  for (const double w : want) scale = std::max(scale, std::abs(w));
  const double tol = 128.0 * std::ldexp(1.0, -23) * scale;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (!(std::abs(got[i] - want[i]) <= tol)) {
      return fmt::format("data set {}: element {} is {}, {} expected (tolerance {:.2e})", set, i, got[i],
                         want[i], tol);
    }
  }
  return "";
}

inline std::vector<double> host_doubles(const Tensor& on_device, const ExecutionContext& ctx) {
  const Tensor y = on_device.to(Device::cpu(), ctx.stream);
  std::vector<double> out(static_cast<std::size_t>(y.numel()));
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i] = ctx.dtype == DType::F64 ? y.data<double>()[i] : static_cast<double>(y.data<float>()[i]);
  return out;
}

inline Tensor device_tensor(const layers::onnx::HostTensor& t, const ExecutionContext& ctx) {
  const Tensor host =
      ctx.dtype == DType::F64
          ? Tensor::from_vector(t.values, t.shape)
          : Tensor::from_vector(std::vector<float>(t.values.begin(), t.values.end()), t.shape);
  return host.to(ctx.device, ctx.stream);
}

// A SoftmaxCrossEntropyLoss node test through the engine's training loss (layers/softmax_cross_entropy.h,
// not a model node: it ends the graph and takes the labels), where the node is what that loss computes:
// scores [N, C], labels [N], the mean over the batch, no class weights, no ignore_index. Anything else
// throws engine::Error naming the attribute or input, like the importer's refusals. Compares output_0 (the
// loss; the _log_prob tests' output_1 is the loss's inside).
inline std::string run_sce_case(const OnnxNodeCase& c, const ExecutionContext& ctx) {
  namespace fs = std::filesystem;
#if ENGINE_HAVE_ONNX
  ::onnx::ModelProto m;
  std::ifstream f(c.dir / "model.onnx", std::ios::binary);
  ENGINE_CHECK(f.good() && m.ParseFromIstream(&f), "{}: unreadable model.onnx", c.name);
  const ::onnx::NodeProto& n = m.graph().node(0);
  const std::string where = fmt::format("node '{}' (SoftmaxCrossEntropyLoss): ", n.name());
  for (const ::onnx::AttributeProto& a : n.attribute()) {
    ENGINE_CHECK(a.name() == "reduction" && a.s() == "mean",
                 "{}attribute {}{} is not supported (the engine's loss is the batch mean, no ignore_index)",
                 where, a.name(), a.name() == "reduction" ? " = " + a.s() : "");
  }
  ENGINE_CHECK(n.input_size() == 2, "{}class weights (input 2) are not supported", where);
#endif
  for (int set = 0; fs::is_directory(c.dir / fmt::format("test_data_set_{}", set)); ++set) {
    const fs::path data = c.dir / fmt::format("test_data_set_{}", set);
    const layers::onnx::HostTensor scores = layers::onnx::read_tensor_file((data / "input_0.pb").string());
    const layers::onnx::HostTensor labels = layers::onnx::read_tensor_file((data / "input_1.pb").string());
    const layers::onnx::HostTensor want = layers::onnx::read_tensor_file((data / "output_0.pb").string());
    ENGINE_CHECK(scores.shape.size() == 2,
                 "node (SoftmaxCrossEntropyLoss): scores of {} dimensions are not "
                 "supported (the engine's loss takes [N, classes])",
                 scores.shape.size());
    Tensor l = Tensor::empty({static_cast<std::int64_t>(labels.values.size())}, DType::I32);
    for (std::size_t i = 0; i < labels.values.size(); ++i)
      l.data<std::int32_t>()[i] = static_cast<std::int32_t>(labels.values[i]);
    layers::SoftmaxCrossEntropy loss;
    const Tensor got = loss.forward(ctx, device_tensor(scores, ctx), l.to(ctx.device, ctx.stream));
    std::string diff = onnx_output_diff(set, host_doubles(got, ctx), want.values);
    if (!diff.empty()) return diff;
  }
  return "";
}

// "" when every data set matches on `ctx`'s device and dtype, else what differs; throws engine::Error when
// the importer refuses.
inline std::string run_onnx_case(const OnnxNodeCase& c, const ExecutionContext& ctx) {
  namespace fs = std::filesystem;
  if (c.name.rfind("test_sce_", 0) == 0) return run_sce_case(c, ctx);
  for (int set = 0; fs::is_directory(c.dir / fmt::format("test_data_set_{}", set)); ++set) {
    const fs::path data = c.dir / fmt::format("test_data_set_{}", set);
    layers::onnx::ImportOptions options;
    options.first_output_only = true;  // output_0 is compared; the others are kept inside the engine's layers
    for (std::size_t i = 1; i < c.inputs.size(); ++i) {
      const fs::path p = data / fmt::format("input_{}.pb", i);
      if (fs::exists(p)) options.bound_inputs[c.inputs[i]] = layers::onnx::read_tensor_file(p.string());
    }
    const layers::onnx::HostTensor x = layers::onnx::read_tensor_file((data / "input_0.pb").string());
    const layers::onnx::HostTensor want = layers::onnx::read_tensor_file((data / "output_0.pb").string());
    layers::Model model = layers::onnx::import_model((c.dir / "model.onnx").string(), options);
    model.set_fusion(false);
    model.finalize(ctx, 1);
    const Tensor y =
        model.forward(device_tensor(x, ctx), c.training ? layers::Mode::Train : layers::Mode::Inference);
    std::string diff = onnx_output_diff(set, host_doubles(y, ctx), want.values);
    if (!diff.empty()) return diff;
  }
  return "";
}

// One table cell: "passed", "FAILED: ...", or "refused: <the importer's reason>".
inline std::string onnx_case_cell(const OnnxNodeCase& c, const ExecutionContext& ctx) {
  try {
    const std::string diff = run_onnx_case(c, ctx);
    return diff.empty() ? "passed" : "FAILED: " + diff;
  } catch (const Error& e) {
    std::string why = e.what();
    const std::size_t at = why.find("): ");  // the message after "node 'x' (Op): "
    if (at != std::string::npos) why = why.substr(at + 3);
    const std::size_t file = why.find(c.dir.string());
    if (file != std::string::npos) why.replace(file, c.dir.string().size(), c.name);
    why = why.substr(0, why.find(" [at "));
    std::replace(why.begin(), why.end(), '|', '/');
    return "refused: " + why;
  }
}

}  // namespace engine::testing
