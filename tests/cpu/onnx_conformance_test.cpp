// ONNX's own node tests (Debian's libonnx-testdata: data/node/test_*/model.onnx with test_data_set_*/
// input_*.pb and output_*.pb) run through the importer and the engine's CPU kernels, in float32 and in the
// float64 reference. Every test whose nodes are all ops the engine implements is run; each one passes, or is
// refused with the importer's message (the attribute or shape named). Nothing is skipped silently: the
// table is printed, with the counts, and docs/ONNX_CONFORMANCE.md keeps a copy.
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
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "layers/onnx/onnx_model.h"
#include "tests/cpu/layer_test_util.h"

namespace engine::layers {
namespace {

namespace fs = std::filesystem;

const char* const kDataDir = "/usr/share/libonnx-testdata/data/node";

// The ops of docs/ONNX.md; a node test is run when every node of its model is one of these.
const std::set<std::string> kEngineOps = {"Conv",
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
                                          "Identity"};

struct Case {
  std::string name;
  fs::path dir;
  std::vector<std::string> inputs;  // the graph's inputs, in order
  bool training = false;            // BatchNormalization training_mode=1, or Dropout's training_mode input
  bool random = false;              // training-mode Dropout with a ratio above 0: numpy's random mask
};

std::vector<Case> engine_cases() {
  std::vector<Case> out;
#if ENGINE_HAVE_ONNX
  if (!fs::is_directory(kDataDir)) return out;
  for (const fs::directory_entry& e : fs::directory_iterator(kDataDir)) {
    ::onnx::ModelProto m;
    std::ifstream f(e.path() / "model.onnx", std::ios::binary);
    if (!f.good() || !m.ParseFromIstream(&f)) continue;
    bool ours = m.graph().node_size() > 0;
    Case c{e.path().filename().string(), e.path(), {}, false};
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
  std::sort(out.begin(), out.end(), [](const Case& a, const Case& b) { return a.name < b.name; });
#endif
  return out;
}

Tensor to_tensor(const onnx::HostTensor& t, DType dtype) {
  if (dtype == DType::F64) return Tensor::from_vector(t.values, t.shape);
  return Tensor::from_vector(std::vector<float>(t.values.begin(), t.values.end()), t.shape);
}

// "" when every data set matches, else what differs; throws engine::Error when the importer refuses.
std::string run_case(const Case& c, DType dtype) {
  for (int set = 0; fs::is_directory(c.dir / fmt::format("test_data_set_{}", set)); ++set) {
    const fs::path data = c.dir / fmt::format("test_data_set_{}", set);
    onnx::ImportOptions options;
    for (std::size_t i = 1; i < c.inputs.size(); ++i) {
      const fs::path p = data / fmt::format("input_{}.pb", i);
      if (fs::exists(p)) options.bound_inputs[c.inputs[i]] = onnx::read_tensor_file(p.string());
    }
    const onnx::HostTensor x = onnx::read_tensor_file((data / "input_0.pb").string());
    const onnx::HostTensor want = onnx::read_tensor_file((data / "output_0.pb").string());
    Model model = onnx::import_model((c.dir / "model.onnx").string(), options);
    model.set_fusion(false);
    model.finalize(testing::cpu_context(dtype), 1);
    const std::vector<double> got =
        testing::host_values(model.forward(to_tensor(x, dtype), c.training ? Mode::Train : Mode::Inference));
    if (got.size() != want.values.size()) {
      return fmt::format("data set {}: {} values, {} expected", set, got.size(), want.values.size());
    }
    double scale = 1.0;
    for (const double w : want.values) scale = std::max(scale, std::abs(w));
    const double tol = 128.0 * std::ldexp(1.0, -23) * scale;
    for (std::size_t i = 0; i < got.size(); ++i) {
      if (!(std::abs(got[i] - want.values[i]) <= tol)) {
        return fmt::format("data set {}: element {} is {}, {} expected (tolerance {:.2e})", set, i, got[i],
                           want.values[i], tol);
      }
    }
  }
  return "";
}

TEST(OnnxConformance, EveryNodeTestOfTheEnginesOpsPassesOrIsRefusedByName) {
  if (!onnx::onnx_available()) GTEST_SKIP() << "this build has no ONNX support (no libonnx-dev at configure)";
  const std::vector<Case> cases = engine_cases();
  if (cases.empty())
    GTEST_SKIP() << "ONNX's node tests are not installed (" << kDataDir << ": libonnx-testdata)";
  int passed = 0, refused = 0, random = 0;
  std::string table = "| test | float32 | float64 |\n|---|---|---|\n";
  for (const Case& c : cases) {
    if (c.random) {
      ++random;
      table += fmt::format("| {} | not compared: a random mask (numpy's) | same |\n", c.name);
      continue;
    }
    std::string cells[2];
    bool refused_here = false;
    for (int k = 0; k < 2; ++k) {
      try {
        const std::string diff = run_case(c, k == 0 ? DType::F32 : DType::F64);
        EXPECT_EQ(diff, "") << c.name << (k == 0 ? " (float32)" : " (float64)");
        cells[k] = diff.empty() ? "passed" : "FAILED: " + diff;
      } catch (const Error& e) {
        std::string why = e.what();
        const std::size_t at = why.find("): ");  // the message after "node 'x' (Op): "
        if (at != std::string::npos) why = why.substr(at + 3);
        const std::size_t file = why.find(c.dir.string());
        if (file != std::string::npos) why.replace(file, c.dir.string().size(), c.name);
        why = why.substr(0, why.find(" [at "));
        cells[k] = "refused: " + why;
        refused_here = true;
      }
    }
    // A refusal must name what it refuses, and be the same in both precisions.
    EXPECT_EQ(cells[0], cells[1]) << c.name;
    passed += cells[0] == "passed" && cells[1] == "passed";
    refused += refused_here;
    std::replace(cells[0].begin(), cells[0].end(), '|', '/');
    table += fmt::format("| {} | {} | {} |\n", c.name, cells[0], cells[0] == cells[1] ? "same" : cells[1]);
  }
  std::printf(
      "%s\nONNX conformance (CPU): %d of %zu node tests of the engine's ops passed in float32 and "
      "float64, %d refused by name, %d not comparable (random masks)\n",
      table.c_str(), passed, cases.size(), refused, random);
  EXPECT_EQ(passed + refused + random, static_cast<int>(cases.size()));
  EXPECT_GT(passed, 0);
}

}  // namespace
}  // namespace engine::layers
