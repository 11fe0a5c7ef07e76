// The zoo's models follow the data's size (issue 42 item 4): resnet18 is torchvision.models.resnet18 from 128
// pixels on the shorter side (its state dict torchvision's, name for name and size for size) and
// kuangliu's CIFAR network below; a model whose classifier fixes the input size is refused naming the sizes
// it takes.

#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/error.h"
#include "layers/models.h"
#include "tests/common/error_of.h"
#include "tests/cpu/layer_test_util.h"

namespace engine::layers {
namespace {

struct NamedSize {
  std::string name;
  std::int64_t size;
};

// torchvision.models.resnet18(num_classes=classes).state_dict(), in order (PyTorch registers a module's
// parameters, then its buffers, then its children in definition order; BasicBlock: conv1, bn1, relu, conv2,
// bn2, downsample).
std::vector<NamedSize> torchvision_resnet18(int in_channels, int classes) {
  std::vector<NamedSize> out;
  const auto bn = [&out](const std::string& prefix, std::int64_t c) {
    for (const char* k : {"weight", "bias", "running_mean", "running_var"})
      out.push_back({prefix + "." + k, c});
    out.push_back({prefix + ".num_batches_tracked", 1});
  };
  out.push_back({"conv1.weight", 64 * in_channels * 7 * 7});
  bn("bn1", 64);
  std::int64_t in = 64;
  const std::int64_t planes[4] = {64, 128, 256, 512};
  for (int layer = 0; layer < 4; ++layer) {
    for (int block = 0; block < 2; ++block) {
      const std::string p = "layer" + std::to_string(layer + 1) + "." + std::to_string(block);
      const std::int64_t c = planes[layer];
      out.push_back({p + ".conv1.weight", c * in * 9});
      bn(p + ".bn1", c);
      out.push_back({p + ".conv2.weight", c * c * 9});
      bn(p + ".bn2", c);
      if (in != c) {
        out.push_back({p + ".downsample.0.weight", c * in});
        bn(p + ".downsample.1", c);
      }
      in = c;
    }
  }
  out.push_back({"fc.weight", 512 * classes});
  out.push_back({"fc.bias", classes});
  return out;
}

std::vector<NamedSize> state_of(const Model& m) {
  std::vector<NamedSize> out;
  for (const StateEntry& e : m.state_dict()) {
    std::int64_t size = 1;
    if (e.kind == StateEntry::Kind::Parameter) size = m.parameters()[e.index].value.numel();
    if (e.kind == StateEntry::Kind::Buffer) size = m.buffers()[e.index].value.numel();
    out.push_back({e.name, size});
  }
  return out;
}

TEST(ModelZooInputSize, Resnet18At224IsTorchvisions) {
  Model m = build_model("resnet18", 3, 10, 224, 224);
  // torchvision.models.resnet18(num_classes=10): 11,181,642 (11,689,512 with its 1000 classes).
  EXPECT_EQ(m.parameter_count(), 11'181'642);
  EXPECT_EQ(m.output_shape({2, 3, 224, 224}), (Shape{2, 10}));
  m.finalize(testing::cpu_context(), 1);
  const std::vector<NamedSize> got = state_of(m), want = torchvision_resnet18(3, 10);
  ASSERT_EQ(got.size(), want.size());  // 122 entries
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i].name, want[i].name) << "entry " << i;
    EXPECT_EQ(got[i].size, want[i].size) << want[i].name;
  }
}

TEST(ModelZooInputSize, Resnet18StemFollowsTheShorterSide) {
  // From 128 on the shorter side torchvision's 7x7 stride-2 stem (its max-pool too: 1/4 before the stages).
  for (const auto& [h, w] : {std::pair{128, 128}, std::pair{160, 128}, std::pair{128, 301}}) {
    const Model m = build_model("resnet18", 3, 5, h, w);
    EXPECT_EQ(m.parameter_count(), 11'181'642 - 5 * 513) << h << "x" << w;
    EXPECT_EQ(m.output_shape({1, 3, h, w}), (Shape{1, 5})) << h << "x" << w;
  }
  // Below, kuangliu's 3x3 stem at full resolution (what CIFAR's 32x32 and checkpoints of it need).
  for (const auto& [h, w] : {std::pair{127, 300}, std::pair{64, 64}, std::pair{32, 32}, std::pair{8, 8}}) {
    Model m = build_model("resnet18", 3, 10, h, w);
    EXPECT_EQ(m.parameter_count(), 11'173'962) << h << "x" << w;
    m.finalize(testing::cpu_context(), 1);
    EXPECT_EQ(state_of(m).back().name, "linear.bias") << h << "x" << w;
  }
}

TEST(ModelZooInputSize, FixedSizeModelsAreRefusedNamingTheSizesTheyTake) {
  struct Case {
    const char* model;
    int channels, size;
    const char* takes;
  };
  const Case cases[] = {
      {"vgg6", 3, 224, "height and width each 32 to 39"},
      {"cnn3", 3, 64, "height and width each 32 to 39"},
      {"airbench", 3, 64, "height and width each 25 to 48"},
      {"mnist_cnn", 1, 32, "height and width each 28 to 29"},
  };
  for (const Case& c : cases) {
    const std::string what =
        engine::testing::error_of([&] { build_model(c.model, c.channels, 10, c.size, c.size); });
    EXPECT_NE(
        what.find(fmt::format("{} does not accept {}x{}x{} inputs (channels x height x width): it takes "
                              "{} (folder datasets: --image-size), and resnet18 takes any size",
                              c.model, c.channels, c.size, c.size, c.takes)),
        std::string::npos)
        << what;
  }
  // The ends of a range are accepted, the sizes past them refused.
  EXPECT_NO_THROW(build_model("vgg6", 3, 10, 39, 32));
  EXPECT_THROW(build_model("vgg6", 3, 10, 40, 32), Error);
  EXPECT_NO_THROW(build_model("airbench", 3, 10, 25, 48));
  EXPECT_THROW(build_model("airbench", 3, 10, 24, 24), Error);
}

}  // namespace
}  // namespace engine::layers
