// torchvision's classification CNNs through ONNX, the way a user brings one (scripts/zoo_table.py holds the
// export settings and PyTorch's side): each model exported by PyTorch is imported, takes two SGD steps
// (tests/common/onnx_torch_steps.h) and is exported back; PyTorch then checks the initial logits and the
// state after the steps against its own float32 and float64 runs, and onnxruntime runs the file written
// back. CI runs the small models (seconds each; ENGINE_ZOO_MODELS=a,b,... for others); scripts/zoo_table.py
// runs the whole list through this test (ENGINE_ZOO_DIR set: it exports and compares itself, and a refusal
// is recorded as a result instead of failing) and writes docs/ZOO.md. Skipped without torchvision,
// onnxruntime or libonnx-dev.

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "layers/onnx/onnx_model.h"
#include "tests/common/environment.h"
#include "tests/common/onnx_skip.h"
#include "tests/common/onnx_torch_steps.h"
#include "tests/common/pytorch_tools.h"
#include "tests/common/scratch_dirs.h"
#include "tests/cpu/layer_test_util.h"

namespace engine::layers {
namespace {

// The models that take seconds on the CPU at 32x32, batch 4.
constexpr const char* kSmallModels = "squeezenet1_1,shufflenet_v2_x1_0";

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

// An integer >= lo from the environment variable `name`, or `fallback` where it is unset.
int env_int(const char* name, int fallback, int lo) {
  const char* v = std::getenv(name);
  if (v == nullptr) return fallback;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  if (*v == '\0' || *end != '\0' || n < lo || n > 1000000) {
    ADD_FAILURE() << name << "='" << v << "': expected an integer from " << lo << " to 1000000";
    return fallback;
  }
  return static_cast<int>(n);
}

// ENGINE_ZOO_LAYOUT: the activations' layout (NCHW where unset).
Layout env_layout() {
  const char* v = std::getenv("ENGINE_ZOO_LAYOUT");
  if (v == nullptr) return Layout::NCHW;
  for (const Layout l : {Layout::NCHW, Layout::NHWC, Layout::NCHW16c, Layout::NCHW8c}) {
    std::string name(layout_name(l));
    for (char& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (name == v) return l;
  }
  ADD_FAILURE() << "ENGINE_ZOO_LAYOUT='" << v << "': expected nchw, nhwc, nchw16c or nchw8c";
  return Layout::NCHW;
}

// The engine's side for one model: DIR/M.safetensors and DIR/M.back.onnx, or DIR/M.refused with the reason.
bool run_engine(const std::string& dir, const std::string& name) {
  const std::string base = dir + "/" + name;
  try {
    onnx::ImportOptions options;  // the image size is the file's (scripts/zoo_table.py chooses it per model)
    options.num_classes = 10;
    Model m = onnx::import_model(base + ".onnx", options);
    ExecutionContext ctx = testing::cpu_context(DType::F32);
    ctx.layout = env_layout();
    m.finalize(ctx, 1);
    // ENGINE_ZOO_BATCH, ENGINE_ZOO_STEPS and ENGINE_ZOO_MOVE (a seed: the batch moved by one ulp per value)
    // are for studying one model's conditioning by hand (docs/ZOO.md's notes), ENGINE_ZOO_LAYOUT (nchw,
    // nhwc, nchw16c, nchw8c) for checking a layout's run against PyTorch's; scripts/zoo_table.py sets none.
    engine::testing::record_two_sgd_steps(
        m, m.sample_shape(), 10, base + ".safetensors", env_int("ENGINE_ZOO_BATCH", 4, 1),
        env_int("ENGINE_ZOO_STEPS", 2, 1), env_int("ENGINE_ZOO_MOVE", -1, 0));
    onnx::export_model(m, base + ".back.onnx");
    std::printf("zoo: %s: imported, trained, exported\n", name.c_str());
    return true;
  } catch (const Error& e) {
    std::ofstream(base + ".refused") << e.what() << "\n";
    std::printf("zoo: %s: refused: %s\n", name.c_str(), e.what());
    return false;
  }
}

TEST(OnnxZoo, TorchvisionModelsImportTrainAsInPyTorchAndExportBack) {
  SKIP_WITHOUT_ONNX();
  const char* given_dir = std::getenv("ENGINE_ZOO_DIR");
  const char* given_models = std::getenv("ENGINE_ZOO_MODELS");
  const std::vector<std::string> models = split_list(given_models ? given_models : kSmallModels);
  if (given_dir != nullptr) {  // scripts/zoo_table.py exported them and compares afterwards
    for (const std::string& m : models) run_engine(given_dir, m);
    return;
  }
  SKIP_WITHOUT_PYTHON_MODULES("torch", "torchvision", "safetensors.torch", "onnx", "onnxruntime");
  const engine::testing::PyTorchTools& torch = engine::testing::pytorch_tools();
  const std::string dir = engine::testing::scratch_dir("onnx_zoo_", "models").string();
  const std::string script = (engine::testing::repo_root() / "scripts" / "zoo_table.py").string();
  std::string list;
  for (const std::string& m : models) list += " " + m;
  const std::string exported = engine::testing::command_output(torch.python + " " + script + " export " +
                                                               dir + list + " 2>&1; echo rc=$?");
  ASSERT_NE(exported.find("rc=0"), std::string::npos) << exported;
  for (const std::string& m : models) EXPECT_TRUE(run_engine(dir, m)) << m;
  const std::string out = engine::testing::command_output(torch.python + " " + script + " compare " + dir +
                                                          list + " 2>&1; echo rc=$?");
  std::printf("%s\n", out.c_str());
  EXPECT_NE(out.find("zoo_table: OK"), std::string::npos) << out;
}

// The same through PyTorch's newer exporter (dynamo=True, optimize=False, as README's "Your own model" says):
// its shape plumbing (Shape, Expand, CastLike of a zero bias, a batch read from the input's shape) folds at
// import, ShuffleNet's chunk arrives as SplitToSequence + SequenceAt and its channel shuffle with an Identity
// inside; the state-dict names, the steps and the file written back are checked as above.
TEST(OnnxZoo, PyTorchsNewerExporterTrainsAsTheTorchScriptOne) {
  SKIP_WITHOUT_ONNX();
  SKIP_WITHOUT_PYTHON_MODULES("torch", "torchvision", "safetensors.torch", "onnx", "onnxruntime",
                              "onnxscript");
  const engine::testing::PyTorchTools& torch = engine::testing::pytorch_tools();
  const std::string dir = engine::testing::scratch_dir("onnx_zoo_", "dynamo").string();
  const std::string script = (engine::testing::repo_root() / "scripts" / "zoo_table.py").string();
  const std::string model = "shufflenet_v2_x1_0";
  const std::string exported = engine::testing::command_output(
      torch.python + " " + script + " export --dynamo " + dir + " " + model + " 2>&1; echo rc=$?");
  ASSERT_NE(exported.find("rc=0"), std::string::npos) << exported;
  ASSERT_TRUE(run_engine(dir, model));
  const std::string out = engine::testing::command_output(torch.python + " " + script + " compare " + dir +
                                                          " " + model + " 2>&1; echo rc=$?");
  std::printf("%s\n", out.c_str());
  EXPECT_NE(out.find("zoo_table: OK"), std::string::npos) << out;
}

}  // namespace
}  // namespace engine::layers
