// A real client of ONNX import: a CNN that is not in the zoo (a residual branch, GELU, global average
// pooling), defined and exported by PyTorch with the lines of README's "Your own model", read by the engine,
// which computes its inference logits and takes two SGD steps (momentum 0.9, weight decay 5e-4) on a batch;
// PyTorch then checks both from the same initial state. A second net does the same with grouped, depthwise
// and dilated convolutions and windowed average pooling with and without the padding counted
// (scripts/onnx_torch_check.py holds the tolerance's reasoning), and a third x * scale + shift with one
// trainable value per channel (ONNX's Mul and Add by broadcasting [C, 1, 1] and [1, C, 1, 1] initializers),
// and a fourth squeeze-excite ([N, C, 1, 1] from GlobalAveragePool through 1x1 convolutions, multiplied into
// [N, C, H, W]), then Split, Sub, Concat and ReduceMean. Skipped, saying how to enable it, where python3
// cannot import torch (CI) or without libonnx-dev.

#include <cstdio>
#include <string>

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

// The engine's side for scripts/onnx_torch_check.py's `net`: imports DIR/NET.onnx, writes
// DIR/NET.safetensors.
void run_engine(const std::string& dir, const std::string& net) {
  onnx::ImportOptions options;
  options.sample_shape = {3, 32, 32};
  options.num_classes = 10;
  Model m = onnx::import_model(dir + "/" + net + ".onnx", options);
  m.finalize(testing::cpu_context(DType::F32), 1);
  engine::testing::record_two_sgd_steps(m, {3, 32, 32}, 10, dir + "/" + net + ".safetensors");
}

// Both nets in one export and one compare: each python start imports torch, most of the test's time.
TEST(OnnxPyTorch, ExportedNetsTrainAsInPyTorch) {
  SKIP_WITHOUT_ONNX();
  // scripts/onnx_torch_check.py's imports, and onnx, which torch.onnx.export needs (not a torch dependency)
  SKIP_WITHOUT_PYTHON_MODULES("torch", "safetensors.torch", "onnx");
  const engine::testing::PyTorchTools& torch = engine::testing::pytorch_tools();
  const std::string dir = engine::testing::scratch_dir("onnx_torch_", "nets").string();
  const std::string script = (engine::testing::repo_root() / "scripts" / "onnx_torch_check.py").string();
  const std::string exported = engine::testing::command_output(
      torch.python + " " + script + " export " + dir + " residual grouped affine se 2>&1; echo rc=$?");
  ASSERT_NE(exported.find("onnx_torch_check: exported residual"), std::string::npos) << exported;
  ASSERT_NE(exported.find("onnx_torch_check: exported grouped"), std::string::npos) << exported;
  ASSERT_NE(exported.find("onnx_torch_check: exported affine"), std::string::npos) << exported;
  ASSERT_NE(exported.find("onnx_torch_check: exported se"), std::string::npos) << exported;
  run_engine(dir, "residual");
  run_engine(dir, "grouped");
  run_engine(dir, "affine");
  run_engine(dir, "se");
  const std::string out = engine::testing::command_output(
      torch.python + " " + script + " compare " + dir + "/residual.safetensors:residual " + dir +
      "/grouped.safetensors:grouped " + dir + "/affine.safetensors:affine " + dir +
      "/se.safetensors:se 2>&1; echo rc=$?");
  std::printf("%s\n", out.c_str());
  EXPECT_NE(out.find("onnx_torch_check: OK"), std::string::npos) << out;
  EXPECT_NE(out.find("rc=0"), std::string::npos) << out;
}

}  // namespace
}  // namespace engine::layers
