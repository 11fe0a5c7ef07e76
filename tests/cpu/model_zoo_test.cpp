// The model zoo: parameter counts (the architectures' published numbers), state-dict names as PyTorch's
// equivalent modules produce them (docs/MODELS.md), uniqueness and order, accepted and refused input sizes.

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "layers/batchnorm2d.h"
#include "layers/models.h"
#include "tests/cpu/layer_test_util.h"

namespace engine::layers {
namespace {

std::vector<std::string> names_of(const Model& m) {
  std::vector<std::string> out;
  for (const StateEntry& e : m.state_dict()) out.push_back(e.name);
  return out;
}

Model finalized(std::string_view name, int c, int classes, int h, int w) {
  Model m = build_model(name, c, classes, h, w);
  m.finalize(testing::cpu_context(), 1);
  return m;
}

TEST(ModelZoo, ParameterCounts) {
  EXPECT_EQ(build_model("vgg6", 3, 10, 32, 32).parameter_count(), 3'249'994);
  EXPECT_EQ(build_model("cnn3", 3, 10, 32, 32).parameter_count(), 2'474'506);
  EXPECT_EQ(build_model("mnist_cnn", 1, 10, 28, 28).parameter_count(), 1'199'882);
  EXPECT_EQ(build_model("resnet18", 3, 10, 32, 32).parameter_count(), 11'173'962);
  // resnet18 does not depend on the input size (global average pool).
  EXPECT_EQ(build_model("resnet18", 3, 10, 8, 8).parameter_count(), 11'173'962);
  // in_channels and num_classes change the first and last layers only: vgg6 on 1 channel and 100 classes.
  EXPECT_EQ(build_model("vgg6", 1, 100, 32, 32).parameter_count(), 3'249'994 - 2 * 64 * 9 + 90 * 513);
}

TEST(ModelZoo, StateDictNamesMatchPyTorch) {
  struct Expect {
    const char* model;
    int c, h, w;
    std::vector<std::string> names;  // must appear, each with the given number of elements
    std::vector<std::int64_t> sizes;
    std::size_t entries;  // len(state_dict())
  };
  const std::vector<Expect> cases = {
      {"vgg6",
       3,
       32,
       32,
       {"features.0.weight", "features.0.bias", "features.1.weight", "features.1.running_mean",
        "features.1.num_batches_tracked", "features.3.weight", "features.7.weight", "features.18.running_var",
        "classifier.0.weight", "classifier.3.bias"},
       {3 * 64 * 9, 64, 64, 64, 1, 64 * 64 * 9, 64 * 128 * 9, 256, 4096 * 512, 10},
       // 6 conv x (w, b) + 6 BN x (w, b, mean, var, count) + 2 linear x (w, b)
       12 + 30 + 4},
      {"cnn3",
       3,
       32,
       32,
       {"features.0.weight", "features.1.bias", "features.4.weight", "features.8.bias",
        "features.9.running_var", "classifier.0.weight", "classifier.3.weight"},
       {3 * 64 * 9, 64, 64 * 128 * 9, 256, 256, 4096 * 512, 512 * 10},
       6 + 15 + 4},
      {"mnist_cnn",
       1,
       28,
       28,
       {"conv1.weight", "conv1.bias", "conv2.weight", "conv2.bias", "fc1.weight", "fc1.bias", "fc2.weight",
        "fc2.bias"},
       {32 * 9, 32, 64 * 32 * 9, 64, 9216 * 128, 128, 128 * 10, 10},
       8},
      {"resnet18",
       3,
       32,
       32,
       {"conv1.weight", "bn1.weight", "bn1.num_batches_tracked", "layer1.0.conv1.weight",
        "layer1.0.bn2.running_var", "layer1.1.conv2.weight", "layer2.0.conv1.weight",
        "layer2.0.shortcut.0.weight", "layer2.0.shortcut.1.running_mean", "layer3.1.bn1.bias",
        "layer4.0.shortcut.1.num_batches_tracked", "layer4.1.conv2.weight", "linear.weight", "linear.bias"},
       {64 * 3 * 9, 64, 1, 64 * 64 * 9, 64, 64 * 64 * 9, 128 * 64 * 9, 128 * 64, 128, 256, 1, 512 * 512 * 9,
        512 * 10, 10},
       // stem conv + bn(5); 8 blocks x (2 conv + 2 bn x 5) ; 3 shortcuts x (conv + bn x 5); linear (2)
       1 + 5 + 8 * 12 + 3 * 6 + 2},
  };
  for (const Expect& e : cases) {
    Model m = finalized(e.model, e.c, 10, e.h, e.w);
    const std::vector<std::string> names = names_of(m);
    EXPECT_EQ(names.size(), e.entries) << e.model;
    EXPECT_EQ(std::set<std::string>(names.begin(), names.end()).size(), names.size())
        << e.model << ": duplicates";
    for (std::size_t i = 0; i < e.names.size(); ++i) {
      const auto it = std::find(names.begin(), names.end(), e.names[i]);
      ASSERT_NE(it, names.end()) << e.model << " has no '" << e.names[i] << "'";
      const StateEntry& entry = m.state_dict()[static_cast<std::size_t>(it - names.begin())];
      std::int64_t size = 1;
      if (entry.kind == StateEntry::Kind::Parameter) size = m.parameters()[entry.index].value.numel();
      if (entry.kind == StateEntry::Kind::Buffer) size = m.buffers()[entry.index].value.numel();
      EXPECT_EQ(size, e.sizes[i]) << e.model << ": " << e.names[i];
    }
    // No name leaks a layer that has no PyTorch module state (ReLU, pool, flatten, dropout, the block's
    // relu).
    for (const std::string& n : names) {
      EXPECT_EQ(n.find("relu"), std::string::npos) << n;
      EXPECT_EQ(n.find("pool"), std::string::npos) << n;
      EXPECT_EQ(n.find("main"), std::string::npos) << n;
    }
  }
}

// The BatchNormFactory (--sync-bn passes one making dist::SyncBatchNorm2d) makes every batch norm of a model
// and nothing else, with the channel counts of the architecture; the state dict keeps its names.
TEST(ModelZoo, BatchNormFactoryMakesEveryBatchNorm) {
  struct Expected {
    const char* name;
    int in_channels, size;
    std::vector<int> channels;
  };
  const std::vector<int> resnet = {64,  64,  64,  64,  64,  128, 128, 128, 128, 128,
                                   256, 256, 256, 256, 256, 512, 512, 512, 512, 512};
  const Expected cases[] = {{"vgg6", 3, 32, {64, 64, 128, 128, 256, 256}},
                            {"cnn3", 3, 32, {64, 128, 256}},
                            {"mnist_cnn", 1, 28, {}},
                            {"resnet18", 3, 32, resnet},
                            {"airbench", 3, 32, {64, 64, 256, 256, 256, 256}}};
  for (const Expected& e : cases) {
    std::vector<int> made;
    const BatchNormFactory factory = [&made](int c, double eps, double momentum) -> std::unique_ptr<Layer> {
      made.push_back(c);
      return std::make_unique<BatchNorm2d>(c, eps, momentum);
    };
    Model with = build_model(e.name, e.in_channels, 10, e.size, e.size, factory);
    with.finalize(testing::cpu_context(), 1);
    std::vector<int> sorted = made;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(sorted, e.channels) << e.name;
    EXPECT_EQ(names_of(with), names_of(finalized(e.name, e.in_channels, 10, e.size, e.size))) << e.name;
  }
}

TEST(ModelZoo, StateDictFollowsPyTorchOrder) {
  // PyTorch's state_dict(): per module in definition order, its parameters, then its buffers.
  Model m = finalized("resnet18", 3, 10, 8, 8);
  const std::vector<std::string> names = names_of(m);
  const std::vector<std::string> head = {
      "conv1.weight",          "bn1.weight",          "bn1.bias",
      "bn1.running_mean",      "bn1.running_var",     "bn1.num_batches_tracked",
      "layer1.0.conv1.weight", "layer1.0.bn1.weight", "layer1.0.bn1.bias"};
  ASSERT_GE(names.size(), head.size());
  EXPECT_EQ(std::vector<std::string>(names.begin(), names.begin() + static_cast<long>(head.size())), head);
  // layer2.0: conv1, bn1, conv2, bn2, then the shortcut, as BasicBlock registers them.
  const auto pos = [&](const std::string& n) {
    return std::find(names.begin(), names.end(), n) - names.begin();
  };
  EXPECT_LT(pos("layer2.0.bn2.num_batches_tracked"), pos("layer2.0.shortcut.0.weight"));
  EXPECT_LT(pos("layer2.0.shortcut.1.num_batches_tracked"), pos("layer2.1.conv1.weight"));
  EXPECT_EQ(names.back(), "linear.bias");
  // parameters() is the same order restricted to parameters.
  std::vector<std::string> param_names;
  for (const StateEntry& e : m.state_dict()) {
    if (e.kind == StateEntry::Kind::Parameter) param_names.push_back(e.name);
  }
  ASSERT_EQ(param_names.size(), m.parameters().size());
  for (std::size_t i = 0; i < param_names.size(); ++i) EXPECT_EQ(m.parameters()[i].name, param_names[i]);
}

TEST(ModelZoo, OutputShapesAndInputSizes) {
  EXPECT_EQ(build_model("vgg6", 3, 10, 32, 32).output_shape({5, 3, 32, 32}), (Shape{5, 10}));
  EXPECT_EQ(build_model("resnet18", 3, 7, 64, 48).output_shape({2, 3, 64, 48}), (Shape{2, 7}));
  EXPECT_EQ(build_model("mnist_cnn", 1, 10, 28, 28).output_shape({3, 1, 28, 28}), (Shape{3, 10}));
  // vgg6/cnn3 flatten 256x4x4 = 4096: 32x32 (and 33..39, floor pooling) fit, 28x28 does not.
  EXPECT_NO_THROW(build_model("cnn3", 3, 10, 35, 35));
  try {
    build_model("vgg6", 1, 10, 28, 28);
    ADD_FAILURE() << "vgg6 accepted 1x28x28";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("vgg6 does not accept 1x28x28 inputs"), std::string::npos) << what;
    EXPECT_NE(what.find("Linear 'classifier.0': expects 4096 input features, got an input [1, 2304]"),
              std::string::npos)
        << what;
  }
  EXPECT_THROW(build_model("mnist_cnn", 1, 10, 32, 32), Error);
  try {
    build_model("resnet50", 3, 10, 32, 32);
    ADD_FAILURE() << "resnet50 accepted";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("unknown model 'resnet50'; the known models are: vgg6, cnn3, mnist_cnn, resnet18"),
              std::string::npos)
        << what;
  }
  EXPECT_THROW(build_model("vgg6", 0, 10, 32, 32), Error);
}

}  // namespace
}  // namespace engine::layers
