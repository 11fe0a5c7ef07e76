// The zoo's airbench (airbench94's net, layers/models.cpp): its parameter count, its state dict as
// PyTorch's make_net() names it (docs/MODELS.md), the identity init of its convs, its BatchNorm momentum
// (PyTorch's 0.4: airbench passes 1 - 0.6), and the 1/9 output scale. The forward and one SGD step agree with
// PyTorch running docs/MODELS.md's module (scripts/airbench_torch_check.py, outside CI: torch is not a
// dependency).

#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "layers/batchnorm2d.h"
#include "layers/models.h"
#include "layers/sequential.h"
#include "tests/cpu/layer_test_util.h"

namespace engine::layers {
namespace {

using testing::cpu_context;
using testing::host_values;
using testing::random_tensor;

const Parameter& parameter(const Model& m, const std::string& name) {
  for (const Parameter& p : m.parameters()) {
    if (p.name == name) return p;
  }
  ENGINE_FAIL("no parameter '{}'", name);
}

TEST(ModelAirbench, ParameterCount) {
  // 312 + 50,944 + 738,304 + 1,180,672 + 2,560 (layers/models.cpp works it out per group).
  EXPECT_EQ(build_model("airbench", 3, 10, 32, 32).parameter_count(), 1'972'792);
}

TEST(ModelAirbench, StateDictIsPyTorchs) {
  Model m = build_model("airbench", 3, 10, 32, 32);
  m.finalize(cpu_context(), 1);
  std::vector<std::string> expected = {"0.weight", "0.bias"};
  for (const char* group : {"2", "3", "4"}) {
    for (const char* part :
         {"conv1.weight", "norm1.weight", "norm1.bias", "norm1.running_mean", "norm1.running_var",
          "norm1.num_batches_tracked", "conv2.weight", "norm2.weight", "norm2.bias", "norm2.running_mean",
          "norm2.running_var", "norm2.num_batches_tracked"}) {
      expected.push_back(std::string(group) + "." + part);
    }
  }
  expected.emplace_back("7.weight");
  std::vector<std::string> names;
  for (const StateEntry& e : m.state_dict()) names.push_back(e.name);
  EXPECT_EQ(names, expected);
  EXPECT_EQ(parameter(m, "0.weight").value.shape(), (Shape{24, 3, 2, 2}));
  EXPECT_EQ(parameter(m, "2.conv1.weight").value.shape(), (Shape{64, 24, 3, 3}));
  EXPECT_EQ(parameter(m, "3.conv2.weight").value.shape(), (Shape{256, 256, 3, 3}));
  EXPECT_EQ(parameter(m, "7.weight").value.shape(), (Shape{10, 256}));
}

TEST(ModelAirbench, ConvsStartAtTheIdentityAndTheWhiteningBiasAtZero) {
  Model m = build_model("airbench", 3, 10, 32, 32);
  m.finalize(cpu_context(), 3);
  for (const char* name :
       {"0.weight", "2.conv1.weight", "2.conv2.weight", "3.conv1.weight", "4.conv2.weight"}) {
    const Parameter& p = parameter(m, name);
    const Shape& s = p.value.shape();
    const std::vector<double> w = host_values(p.value);
    const std::int64_t out = s[0], in = s[1], k = s[2];
    double rest_abs = 0.0;
    for (std::int64_t o = 0; o < out; ++o) {
      for (std::int64_t c = 0; c < in; ++c) {
        for (std::int64_t t = 0; t < k * k; ++t) {
          const double v = w[static_cast<std::size_t>((o * in + c) * k * k + t)];
          if (o < in) {
            const bool centre = c == o && t == (k / 2) * k + k / 2;
            ASSERT_EQ(v, centre ? 1.0 : 0.0) << name << " [" << o << ", " << c << ", " << t << "]";
          } else {
            rest_abs += std::fabs(v);
          }
        }
      }
    }
    // The other filters keep PyTorch's default U(-1/sqrt(fan_in), 1/sqrt(fan_in)) (mean |v| = bound / 2).
    if (out > in) {
      const double bound = 1.0 / std::sqrt(static_cast<double>(in * k * k));
      EXPECT_NEAR(rest_abs / static_cast<double>((out - in) * in * k * k), bound / 2, bound / 10) << name;
    }
  }
  for (const double b : host_values(parameter(m, "0.bias").value)) EXPECT_EQ(b, 0.0);
  for (const double g : host_values(parameter(m, "3.norm2.weight").value)) EXPECT_EQ(g, 1.0);
}

TEST(ModelAirbench, BatchNormMomentumIsPyTorchs04AndTheOutputIsScaled) {
  Model m = build_model("airbench", 3, 10, 32, 32);
  m.finalize(cpu_context(DType::F64), 5);
  const Tensor x = random_tensor({2, 3, 32, 32}, DType::F64, 9);
  const Tensor y = m.forward(x, Mode::Train);
  EXPECT_EQ(y.shape(), (Shape{2, 10}));
  // One training forward from running_mean 0: running_mean = 0.4 * batch mean (airbench's momentum 0.6 is
  // the weight of the old value).
  auto& root = static_cast<Sequential&>(m.root());
  auto& group = static_cast<Sequential&>(root.at(2));
  auto& norm1 = static_cast<BatchNorm2d&>(group.at(2));
  const std::vector<double> mean = host_values(norm1.saved_mean()),
                            running = host_values(norm1.running_mean());
  for (std::size_t c = 0; c < mean.size(); ++c) EXPECT_NEAR(running[c], 0.4 * mean[c], 1e-12) << c;
  // The logits are the linear layer's output times 1/9: scaling the linear weight by 9 cancels it.
  const std::vector<double> before = host_values(m.forward(x, Mode::Inference));
  const Parameter& w = parameter(m, "7.weight");
  double* wp = w.value.data<double>();
  for (std::int64_t i = 0; i < w.value.numel(); ++i) wp[i] *= 9.0;
  const std::vector<double> after = host_values(m.forward(x, Mode::Inference));
  for (std::size_t i = 0; i < before.size(); ++i)
    EXPECT_NEAR(after[i], 9.0 * before[i], 1e-12 * (1 + std::fabs(after[i])));
}

TEST(ModelAirbench, RefusesOtherInputSizes) {
  // The last max-pool (3x3, stride 3) must leave 1x1: inputs of 25 to 48 pixels (32 -> 31 -> 15 -> 7 -> 3).
  EXPECT_THROW(build_model("airbench", 3, 10, 24, 24), Error);
  EXPECT_THROW(build_model("airbench", 3, 10, 49, 49), Error);
  EXPECT_NO_THROW(build_model("airbench", 3, 10, 25, 25));
  EXPECT_NO_THROW(build_model("airbench", 3, 10, 48, 48));
}

}  // namespace
}  // namespace engine::layers
