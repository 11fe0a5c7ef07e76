// ONNX's own node tests through the importer and the engine's CPU kernels, in float32 and in the float64
// reference (tests/common/onnx_node_tests.h says which tests and the tolerance). Prints the table and the
// counts; docs/ONNX_CONFORMANCE.md keeps a copy.

#include <cstdio>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "tests/common/onnx_node_tests.h"
#include "tests/common/onnx_skip.h"
#include "tests/cpu/layer_test_util.h"

namespace engine::layers {
namespace {

TEST(OnnxConformance, EveryNodeTestOfTheEnginesOpsPassesOrIsRefusedByName) {
  SKIP_WITHOUT_ONNX();
  const std::vector<engine::testing::OnnxNodeCase> cases = engine::testing::onnx_engine_cases();
  if (cases.empty()) {
    GTEST_SKIP() << "ONNX's node tests are not installed (" << engine::testing::onnx_node_test_dir()
                 << ": libonnx-testdata)";
  }
  int passed = 0, refused = 0, random = 0;
  std::string table = "| test | float32 | float64 |\n|---|---|---|\n";
  for (const engine::testing::OnnxNodeCase& c : cases) {
    if (c.random) {
      ++random;
      table += fmt::format("| {} | not compared: a random mask (numpy's) | same |\n", c.name);
      continue;
    }
    const std::string f32 = engine::testing::onnx_case_cell(c, testing::cpu_context(DType::F32));
    const std::string f64 = engine::testing::onnx_case_cell(c, testing::cpu_context(DType::F64));
    EXPECT_EQ(f32.rfind("FAILED", 0), std::string::npos) << c.name << " (float32): " << f32;
    EXPECT_EQ(f64.rfind("FAILED", 0), std::string::npos) << c.name << " (float64): " << f64;
    // A refusal is the importer's, before anything runs: the same in both precisions.
    EXPECT_EQ(f32, f64) << c.name;
    passed += f32 == "passed" && f64 == "passed";
    refused += f32.rfind("refused", 0) == 0;
    table += fmt::format("| {} | {} | {} |\n", c.name, f32, f32 == f64 ? "same" : f64);
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
