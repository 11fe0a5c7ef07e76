// ONNX's own node tests through the importer and the engine's CUDA kernels in float32 (the CPU run, in
// float32 and float64, is tests/cpu/onnx_conformance_test.cpp; tests/common/onnx_node_tests.h says which
// tests and the tolerance). Prints the table and the counts.

#include <cstdio>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/cuda_check.h"
#include "core/device.h"
#include "core/stream.h"
#include "kernels/cuda/handles.h"
#include "tests/common/gpu.h"
#include "tests/common/onnx_node_tests.h"
#include "tests/common/onnx_skip.h"

namespace engine::layers {
namespace {

TEST(OnnxConformanceGpu, EveryNodeTestOfTheEnginesOpsPassesOrIsRefusedByName) {
  SKIP_WITHOUT_ONNX();
  SKIP_WITHOUT_GPU();
  const std::vector<engine::testing::OnnxNodeCase> cases = engine::testing::onnx_engine_cases();
  if (cases.empty()) GTEST_SKIP() << "ONNX's node tests are not installed (libonnx-testdata)";
  set_device(0);
  Stream stream{0};
  cuda::CudaHandles handles(0, stream.get(), {});
  ExecutionContext ctx;
  ctx.device = Device::cuda(0);
  ctx.dtype = DType::F32;
  ctx.stream = stream.get();
  ctx.handles = &handles;
  int passed = 0, refused = 0, random = 0;
  std::string table = "| test | CUDA float32 |\n|---|---|\n";
  for (const engine::testing::OnnxNodeCase& c : cases) {
    if (c.random) {
      ++random;
      continue;
    }
    const std::string cell = engine::testing::onnx_case_cell(c, ctx);
    EXPECT_EQ(cell.rfind("FAILED", 0), std::string::npos) << c.name << ": " << cell;
    passed += cell == "passed";
    refused += cell.rfind("refused", 0) == 0;
    table += fmt::format("| {} | {} |\n", c.name, cell);
  }
  std::printf(
      "%s\nONNX conformance (GPU): %d of %zu node tests of the engine's ops passed in float32, %d refused "
      "by name, %d not comparable (random masks)\n",
      table.c_str(), passed, cases.size(), refused, random);
  EXPECT_EQ(passed + refused + random, static_cast<int>(cases.size()));
  EXPECT_GT(passed, 0);
}

}  // namespace
}  // namespace engine::layers
