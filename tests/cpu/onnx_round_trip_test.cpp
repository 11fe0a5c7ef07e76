// ONNX out and back in: a zoo model written by the exporter and read by the importer is the same network —
// the same state-dict names (PyTorch's), the same logits in inference, the same gradients in training (the
// Graph container's backward, residual sums included) — and export -> import -> export -> import gives
// bit-identical logits. Skips in builds without libonnx-dev.

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "layers/models.h"
#include "layers/onnx/onnx_model.h"
#include "tests/common/onnx_skip.h"
#include "tests/common/scratch_dirs.h"
#include "tests/cpu/layer_test_util.h"

namespace engine::layers {
namespace {

struct Zoo {
  const char* name;
  int c, hw;
  bool has_dropout;
};

std::vector<std::string> names_of(const Model& m) {
  std::vector<std::string> out;
  for (const Parameter& p : m.parameters()) out.push_back(p.name);
  for (const Buffer& b : m.buffers()) out.push_back(b.name);
  return out;
}

double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b) {
  EXPECT_EQ(a.size(), b.size());
  double d = 0;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) d = std::max(d, std::abs(a[i] - b[i]));
  return d;
}

Model import(const std::string& path, const Zoo& z) {
  onnx::ImportOptions o;
  o.sample_shape = {z.c, z.hw, z.hw};
  o.num_classes = 10;
  return onnx::import_model(path, o);
}

class OnnxRoundTrip : public ::testing::TestWithParam<Zoo> {
 protected:
  void SetUp() override { SKIP_WITHOUT_ONNX(); }
};

TEST_P(OnnxRoundTrip, SameNamesLogitsAndGradients) {
  const Zoo z = GetParam();
  const auto dir = engine::testing::scratch_dir("onnx_rt_", z.name);
  // float64: the import must reproduce the zoo model's arithmetic, not merely come close in float32.
  const ExecutionContext ctx = testing::cpu_context(DType::F64);
  Model zoo = build_model(z.name, z.c, 10, z.hw, z.hw);
  // Unfused, while the import fuses its BatchNorm -> ReLU pairs: in float64 a fused pair runs the
  // reference's plain composition, so the two run the same operations in the same order.
  zoo.set_fusion(false);
  zoo.finalize(ctx, 5);
  const std::string first = (dir / "first.onnx").string();
  onnx::export_model(zoo, first);
  Model imported = import(first, z);
  imported.finalize(ctx, 99);  // another seed: every value must come from the file
  const std::vector<std::string> zoo_names = names_of(zoo);
  EXPECT_EQ(names_of(imported), zoo_names);
  // The file holds float32 values: give the zoo model the same (same names, so the same offsets).
  Tensor zoo_params = zoo.flat_parameters(), zoo_buffers = zoo.flat_buffers();
  zoo_params.copy_from(imported.flat_parameters());
  zoo_buffers.copy_from(imported.flat_buffers());

  // BatchNormalization's epsilon is a float32 attribute, read back as the decimal it was written from
  // (layers/onnx/onnx_attrs.h: 1e-5 and airbench's 1e-12 exactly); read as the float32 itself it would be
  // 1e-5 * (1 - 2.5e-9) and 1e-12 * (1 - 4e-8), which moves each normalized value by less than 2^-24 of
  // itself: the two agree within 2^-24 of the output's scale, far inside float32's differences (a bug here
  // gives differences of order 1).
  const double rel = std::ldexp(1.0, -24);
  const Tensor x = testing::random_tensor({2, z.c, z.hw, z.hw}, DType::F64, 17);
  const std::vector<double> logits = testing::host_values(zoo.forward(x, Mode::Inference));
  double scale = 1.0;
  for (const double v : logits) scale = std::max(scale, std::abs(v));
  EXPECT_LE(max_abs_diff(logits, testing::host_values(imported.forward(x, Mode::Inference))), rel * scale);

  // Training: the same loss gradient gives the same parameter gradients (the graph sums the gradients of a
  // tensor read twice: the residual blocks' inputs). The file is in inference form, without Dropout: a
  // model with dropout is compared in Eval mode (running statistics), the others in Train mode.
  const Mode mode = z.has_dropout ? Mode::Eval : Mode::Train;
  const Tensor dy = testing::random_tensor({2, 10}, DType::F64, 23);
  zoo.forward(x, mode);
  zoo.backward(dy);
  imported.forward(x, mode);
  imported.backward(dy);
  const std::vector<double> g = testing::host_values(zoo.flat_gradients());
  double g_scale = 1.0;
  for (const double v : g) g_scale = std::max(g_scale, std::abs(v));
  EXPECT_LE(max_abs_diff(g, testing::host_values(imported.flat_gradients())), rel * g_scale);

  // Export the imported model again and read that: bit-identical logits in float32.
  Model f32_first = import(first, z);
  f32_first.finalize(testing::cpu_context(), 1);
  const std::string second = (dir / "second.onnx").string();
  onnx::export_model(f32_first, second);
  Model f32_second = import(second, z);
  f32_second.finalize(testing::cpu_context(), 2);
  const Tensor x32 = testing::random_tensor({2, z.c, z.hw, z.hw}, DType::F32, 17);
  EXPECT_EQ(testing::host_values(f32_first.forward(x32, Mode::Inference)),
            testing::host_values(f32_second.forward(x32, Mode::Inference)));
  EXPECT_EQ(names_of(f32_second), zoo_names);
}

// mnist_cnn: conv, max-pool, dropout, flatten, linear. airbench: GELU (written in its Erf form at opset 17
// and read back as one GELU), a 2x2 conv with bias, Mul by 1/9. resnet18 (on 16x16, for time): residual
// sums, identity and 1x1-conv shortcuts, the global average pool.
INSTANTIATE_TEST_SUITE_P(Zoo, OnnxRoundTrip,
                         ::testing::Values(Zoo{"mnist_cnn", 1, 28, true}, Zoo{"airbench", 3, 32, false},
                                           Zoo{"resnet18", 3, 16, false}),
                         [](const auto& param_info) { return std::string(param_info.param.name); });

}  // namespace
}  // namespace engine::layers
