// onnxruntime, a real client of what cnn_export_onnx writes: a zoo model after a training-mode forward (so
// the BatchNorm running statistics are not the identity), exported, run by onnxruntime's CPU provider on the
// same float32 images, gives the engine's float32 inference logits within float32's summation bound, and the
// same top-1. Skips without onnxruntime (scripts/install-python-deps.sh installs it) or without libonnx.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "layers/models.h"
#include "layers/onnx/onnx_model.h"
#include "tests/common/environment.h"
#include "tests/common/onnx_skip.h"
#include "tests/common/pytorch_tools.h"
#include "tests/common/scratch_dirs.h"
#include "tests/cpu/layer_test_util.h"

namespace engine::layers {
namespace {

struct Case {
  const char* name;
  int c, hw;
  int fan_in;  // the longest sum of products in the model (its widest convolution or linear layer)
};

class OnnxRuntime : public ::testing::TestWithParam<Case> {};

TEST_P(OnnxRuntime, GivesTheEnginesLogitsAndTop1) {
  SKIP_WITHOUT_ONNX();
  SKIP_WITHOUT_PYTHON_MODULES("onnxruntime", "numpy");
  const Case& k = GetParam();
  Model model = build_model(k.name, k.c, 10, k.hw, k.hw);
  model.set_fusion(false);
  model.finalize(testing::cpu_context(), 3);
  const Tensor warm = testing::random_tensor({8, k.c, k.hw, k.hw}, DType::F32, 11);
  model.forward(warm, Mode::Train);  // moves the running statistics away from (0, 1)
  const auto dir = engine::testing::scratch_dir("onnxruntime_", k.name);
  const std::string path = (dir / "model.onnx").string(), input = (dir / "x.f32").string();
  onnx::export_model(model, path);

  const int n = 4;
  const Tensor x = testing::random_tensor({n, k.c, k.hw, k.hw}, DType::F32, 12);
  if (std::FILE* f = std::fopen(input.c_str(), "wb")) {
    std::fwrite(x.data<float>(), sizeof(float), static_cast<std::size_t>(x.numel()), f);
    std::fclose(f);
  }
  const std::vector<double> ours = testing::host_values(model.forward(x, Mode::Inference));
  const std::string out = engine::testing::command_output(
      engine::testing::pytorch_python() + " " + engine::testing::repo_root().string() +
      "/tests/python/onnxruntime_logits.py " + path + " " + input + " " + std::to_string(n) + " " +
      std::to_string(k.c) + " " + std::to_string(k.hw) + " " + std::to_string(k.hw));
  ASSERT_FALSE(out.empty()) << "onnxruntime failed on " << path;
  const nlohmann::json theirs = nlohmann::json::parse(out);
  ASSERT_EQ(theirs.size(), static_cast<std::size_t>(n));
  double scale = 0.0;
  for (const double v : ours) scale = std::max(scale, std::abs(v));
  ASSERT_GT(scale, 0.0);
  // Two float32 evaluations that sum in other orders differ by about fan_in * 2^-24 of the sums' scale per
  // layer, taken here at the logits' largest magnitude (measured: 1e-8 to 6e-8 of ~0.1-1 logits, far inside;
  // a wrong weight, layout or attribute gives differences of the logits' own size; inputs scaled by 1.001
  // fail airbench and resnet18).
  const double bound = k.fan_in * std::ldexp(1.0, -24) * scale;

  for (int i = 0; i < n; ++i) {
    int best_ours = 0, best_theirs = 0;
    for (int j = 0; j < 10; ++j) {
      const double a = ours[static_cast<std::size_t>(i * 10 + j)], b = theirs[i][j].get<double>();
      EXPECT_NEAR(a, b, bound) << k.name << " sample " << i << " class " << j;
      if (a > ours[static_cast<std::size_t>(i * 10 + best_ours)]) best_ours = j;
      if (b > theirs[i][best_theirs].get<double>()) best_theirs = j;
    }
    EXPECT_EQ(best_ours, best_theirs) << k.name << " sample " << i;
  }
}

// mnist_cnn: conv, max-pool, dropout (inference: identity), flatten, a 9216-wide linear. airbench: GELU (the
// Erf pattern at opset 17), a 2x2 conv with bias, Mul by a constant. resnet18 on 16x16: residual sums,
// 1x1-conv shortcuts, global average pooling, 3x3x512 convolutions.
INSTANTIATE_TEST_SUITE_P(Zoo, OnnxRuntime,
                         ::testing::Values(Case{"mnist_cnn", 1, 28, 9216}, Case{"airbench", 3, 32, 4608},
                                           Case{"resnet18", 3, 16, 4608}),
                         [](const auto& param_info) { return std::string(param_info.param.name); });

}  // namespace
}  // namespace engine::layers
