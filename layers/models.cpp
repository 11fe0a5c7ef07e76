#include "layers/models.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "layers/batchnorm2d.h"
#include "layers/conv2d.h"
#include "layers/dropout.h"
#include "layers/flatten.h"
#include "layers/gelu.h"
#include "layers/global_avgpool.h"
#include "layers/linear.h"
#include "layers/maxpool2d.h"
#include "layers/mul.h"
#include "layers/onnx/onnx_model.h"
#include "layers/relu.h"
#include "layers/residual.h"
#include "layers/sequential.h"

namespace engine::layers {

namespace {

// The model's batch norm of `num_features` channels: BatchNorm2d unless the caller gives another.
std::unique_ptr<Layer> batchnorm(const BatchNormFactory& make, int num_features, double eps = 1e-5,
                                 double momentum = 0.1) {
  return make ? make(num_features, eps, momentum)
              : std::make_unique<BatchNorm2d>(num_features, eps, momentum);
}

Conv2dOptions conv3x3(int in, int out, int stride = 1, bool bias = true) {
  return {
      .in_channels = in, .out_channels = out, .kernel_size = 3, .stride = stride, .padding = 1, .bias = bias};
}

// The classifier vgg6 and cnn3 share: Linear(4096, 512), ReLU, Dropout(0.5), Linear(512, classes).
std::unique_ptr<Sequential> vgg_classifier(int num_classes) {
  auto c = std::make_unique<Sequential>();
  c->emplace<Linear>(4096, 512);         // classifier.0
  c->emplace<ReLU>();                    // classifier.1
  c->emplace<Dropout>(0.5);              // classifier.2
  c->emplace<Linear>(512, num_classes);  // classifier.3
  return c;
}

// vgg6 on 3x32x32, 10 classes (conv bias ON, as nn.Conv2d's default; that is what makes the count):
//   conv weights  3*64*9 + 64*64*9 + 64*128*9 + 128*128*9 + 128*256*9 + 256*256*9 = 1,144,512
//   conv biases   64 + 64 + 128 + 128 + 256 + 256                                  =       896
//   BN gamma+beta 2 * 896                                                          =     1,792
//   fc1           4096*512 + 512                                                   = 2,097,664
//   fc2           512*10 + 10                                                      =     5,130
//   total                                                                            3,249,994
// (without conv biases it would be 3,249,098).
std::unique_ptr<Layer> vgg6(int in_channels, int num_classes, const BatchNormFactory& bn) {
  auto features = std::make_unique<Sequential>();
  int in = in_channels;
  for (int width : {64, 128, 256}) {
    for (int i = 0; i < 2; ++i) {
      features->emplace<Conv2d>(conv3x3(in, width));
      features->add(batchnorm(bn, width));
      features->emplace<ReLU>();
      in = width;
    }
    features->emplace<MaxPool2d>(2);
  }
  auto root = std::make_unique<Sequential>();
  root->add(std::move(features), "features");
  root->emplace_named<Flatten>("flatten");
  root->add(vgg_classifier(num_classes), "classifier");
  return root;
}

// cnn3 on 3x32x32, 10 classes:
//   conv  3*64*9+64 + 64*128*9+128 + 128*256*9+256 = 1,792 + 73,856 + 295,168 = 370,816
//   BN    2 * (64 + 128 + 256)                                               =     896
//   fc1 2,097,664, fc2 5,130                                        total      2,474,506
std::unique_ptr<Layer> cnn3(int in_channels, int num_classes, const BatchNormFactory& bn) {
  auto features = std::make_unique<Sequential>();
  int in = in_channels;
  for (int width : {64, 128, 256}) {
    features->emplace<Conv2d>(conv3x3(in, width));
    features->add(batchnorm(bn, width));
    features->emplace<ReLU>();
    features->emplace<MaxPool2d>(2);
    in = width;
  }
  auto root = std::make_unique<Sequential>();
  root->add(std::move(features), "features");
  root->emplace_named<Flatten>("flatten");
  root->add(vgg_classifier(num_classes), "classifier");
  return root;
}

// PyTorch examples/mnist Net (1x28x28, 10 classes): conv1 320 + conv2 18,496 + fc1 1,179,776 + fc2 1,290 =
// 1,199,882. Its forward ends in log_softmax; here the logits go to SoftmaxCrossEntropy, the same loss.
std::unique_ptr<Layer> mnist_cnn(int in_channels, int num_classes, const BatchNormFactory& /*no BN*/) {
  auto root = std::make_unique<Sequential>();
  root->emplace_named<Conv2d>(
      "conv1", Conv2dOptions{.in_channels = in_channels, .out_channels = 32, .kernel_size = 3});
  root->emplace_named<ReLU>("relu1");
  root->emplace_named<Conv2d>("conv2",
                              Conv2dOptions{.in_channels = 32, .out_channels = 64, .kernel_size = 3});
  root->emplace_named<ReLU>("relu2");
  root->emplace_named<MaxPool2d>("pool", 2);
  root->emplace_named<Dropout>("dropout1", 0.25);
  root->emplace_named<Flatten>("flatten");
  root->emplace_named<Linear>("fc1", 9216, 128);
  root->emplace_named<ReLU>("relu3");
  root->emplace_named<Dropout>("dropout2", 0.5);
  root->emplace_named<Linear>("fc2", 128, num_classes);
  return root;
}

// A BasicBlock: conv1 (3x3, stride), bn1, relu, conv2 (3x3), bn2, + shortcut, relu. Convs have no bias
// (BatchNorm follows). The shortcut is a 1x1 conv (stride) + BN when the shape changes, else identity;
// kuangliu names it "shortcut", torchvision "downsample".
std::unique_ptr<Layer> basic_block(int in_planes, int planes, int stride, const BatchNormFactory& bn,
                                   const char* shortcut_name = "shortcut") {
  auto main = std::make_unique<Sequential>();
  main->emplace_named<Conv2d>("conv1", conv3x3(in_planes, planes, stride, /*bias=*/false));
  main->add(batchnorm(bn, planes), "bn1");
  main->emplace_named<ReLU>("relu1");
  main->emplace_named<Conv2d>("conv2", conv3x3(planes, planes, 1, /*bias=*/false));
  main->add(batchnorm(bn, planes), "bn2");
  std::unique_ptr<Sequential> shortcut;
  if (stride != 1 || in_planes != planes) {
    shortcut = std::make_unique<Sequential>();
    shortcut->emplace<Conv2d>(Conv2dOptions{.in_channels = in_planes,
                                            .out_channels = planes,
                                            .kernel_size = 1,
                                            .stride = stride,
                                            .padding = 0,
                                            .bias = false});
    shortcut->add(batchnorm(bn, planes));
  }
  return std::make_unique<Residual>(std::move(main), std::move(shortcut), shortcut_name);
}

// The four stages of BasicBlocks [2, 2, 2, 2] (64, 128, 256, 512 planes; strides 1, 2, 2, 2) on a 64-channel
// stem, "layer1".."layer4", then the global average pool.
void resnet18_stages(Sequential& root, const BatchNormFactory& bn, const char* shortcut_name) {
  int in_planes = 64;
  const int planes[4] = {64, 128, 256, 512};
  const int strides[4] = {1, 2, 2, 2};
  for (int stage = 0; stage < 4; ++stage) {
    auto layer = std::make_unique<Sequential>();
    for (int block = 0; block < 2; ++block) {
      layer->add(basic_block(in_planes, planes[stage], block == 0 ? strides[stage] : 1, bn, shortcut_name));
      in_planes = planes[stage];
    }
    root.add(std::move(layer), fmt::format("layer{}", stage + 1));
  }
}

// kuangliu/pytorch-cifar ResNet18 (BasicBlock, [2, 2, 2, 2]) on 3x32x32, 10 classes: 11,173,962 parameters.
std::unique_ptr<Layer> resnet18_cifar(int in_channels, int num_classes, const BatchNormFactory& bn) {
  auto root = std::make_unique<Sequential>();
  root->emplace_named<Conv2d>("conv1", conv3x3(in_channels, 64, 1, /*bias=*/false));
  root->add(batchnorm(bn, 64), "bn1");
  root->emplace_named<ReLU>("relu");
  resnet18_stages(*root, bn, "shortcut");
  root->emplace_named<GlobalAvgPool>("pool");
  root->emplace_named<Linear>("linear", 512, num_classes);
  return root;
}

// torchvision.models.resnet18(num_classes=...): a 7x7 stride-2 stem conv (padding 3, no bias), bn1, relu,
// a 3x3 stride-2 max-pool (padding 1), the same stages (shortcuts named "downsample"), avgpool, fc. On
// 3x224x224 with 1000 classes 11,689,512 parameters (10 classes: 11,181,642). Initialization stays the
// engine's (PyTorch's layer defaults), not torchvision's kaiming_normal_ of the convs.
std::unique_ptr<Layer> resnet18_imagenet(int in_channels, int num_classes, const BatchNormFactory& bn) {
  auto root = std::make_unique<Sequential>();
  root->emplace_named<Conv2d>("conv1", Conv2dOptions{.in_channels = in_channels,
                                                     .out_channels = 64,
                                                     .kernel_size = 7,
                                                     .stride = 2,
                                                     .padding = 3,
                                                     .bias = false});
  root->add(batchnorm(bn, 64), "bn1");
  root->emplace_named<ReLU>("relu");
  root->emplace_named<MaxPool2d>("maxpool", 3, 2, 1);
  resnet18_stages(*root, bn, "downsample");
  root->emplace_named<GlobalAvgPool>("avgpool");
  root->emplace_named<Linear>("fc", 512, num_classes);
  return root;
}

// resnet18 follows the data: torchvision's ImageNet network from kResnetImagenetFrom pixels on the shorter
// side (its stem divides the input by 4), kuangliu's CIFAR network below (a 3x3 stem at full resolution).
constexpr int kResnetImagenetFrom = 128;

std::unique_ptr<Layer> resnet18(int in_channels, int num_classes, int height, int width,
                                const BatchNormFactory& bn) {
  return std::min(height, width) >= kResnetImagenetFrom ? resnet18_imagenet(in_channels, num_classes, bn)
                                                        : resnet18_cifar(in_channels, num_classes, bn);
}

// airbench94's ConvGroup: conv1, pool, norm1, activ, conv2, norm2, activ. PyTorch registers one GELU
// `activ` and calls it twice; GELU is stateless, so the second one's name ("activ2") is in no state dict.
// BatchNorm: eps 1e-12 and momentum 1 - 0.6 (airbench's BatchNorm passes momentum=1-0.6 to nn.BatchNorm2d).
std::unique_ptr<Layer> airbench_conv_group(int in, int out, const BatchNormFactory& bn) {
  constexpr double kEps = 1e-12, kMomentum = 1.0 - 0.6;
  Conv2dOptions conv = conv3x3(in, out, 1, /*bias=*/false);
  conv.identity_init = true;
  auto group = std::make_unique<Sequential>();
  group->emplace_named<Conv2d>("conv1", conv);
  group->emplace_named<MaxPool2d>("pool", 2);
  group->add(batchnorm(bn, out, kEps, kMomentum), "norm1");
  group->emplace_named<GELU>("activ");
  conv.in_channels = out;
  group->emplace_named<Conv2d>("conv2", conv);
  group->add(batchnorm(bn, out, kEps, kMomentum), "norm2");
  group->emplace_named<GELU>("activ2");
  return group;
}

// airbench94's make_net() on 3x32x32, 10 classes (children "0".."8" as its nn.Sequential):
//   0 whitening conv 2x2 3->24 with bias   3*24*4 + 24                          =       312
//   2 group 24->64    24*64*9 + 64*64*9 + 2 * 2*64                             =    50,944
//   3 group 64->256   64*256*9 + 256*256*9 + 2 * 2*256                         =   738,304
//   4 group 256->256  2 * 256*256*9 + 2 * 2*256                                = 1,180,672
//   7 linear          256*10 (no bias)                                         =     2,560
//   total                                                                         1,972,792
// Spatially 32 -> 31 (2x2, no padding) -> 15 -> 7 -> 3 -> 1 (max-pool 3); the last pool must leave 1x1 for
// the linear layer's 256 inputs, so it accepts 25x25 to 48x48.
std::unique_ptr<Layer> airbench(int in_channels, int num_classes, const BatchNormFactory& bn) {
  constexpr int kWhitenKernel = 2;
  const int whiten_width = 2 * in_channels * kWhitenKernel * kWhitenKernel;
  auto root = std::make_unique<Sequential>();
  root->emplace<Conv2d>(Conv2dOptions{.in_channels = in_channels,
                                      .out_channels = whiten_width,
                                      .kernel_size = kWhitenKernel,
                                      .padding = 0,
                                      .bias = true,
                                      .identity_init = true});
  root->emplace<GELU>();
  root->add(airbench_conv_group(whiten_width, 64, bn));
  root->add(airbench_conv_group(64, 256, bn));
  root->add(airbench_conv_group(256, 256, bn));
  root->emplace<MaxPool2d>(3);
  root->emplace<Flatten>();
  root->emplace<Linear>(256, num_classes, /*bias=*/false);
  root->emplace<Mul>(1.0 / 9.0);
  return root;
}

// A builder whose layers do not depend on the input size (those that accept one size fail its output shape).
template <std::unique_ptr<Layer> (*Build)(int, int, const BatchNormFactory&)>
std::unique_ptr<Layer> size_independent(int in_channels, int num_classes, int /*height*/, int /*width*/,
                                        const BatchNormFactory& bn) {
  return Build(in_channels, num_classes, bn);
}

struct ZooEntry {
  const char* name;
  std::unique_ptr<Layer> (*build)(int in_channels, int num_classes, int height, int width,
                                  const BatchNormFactory& bn);
};

constexpr ZooEntry kZoo[] = {
    {"vgg6", size_independent<vgg6>},           {"cnn3", size_independent<cnn3>},
    {"mnist_cnn", size_independent<mnist_cnn>}, {"resnet18", resnet18},
    {"airbench", size_independent<airbench>},
};

// The square sizes up to kLargestProbed that `entry` accepts, as ranges ("32 to 39"), found from the
// network's output shape (every zoo model's height and width are independent, so a square size stands for
// each side): what a refusal offers instead.
constexpr int kLargestProbed = 1024;

std::string accepted_sizes(const ZooEntry& entry, int in_channels, int num_classes) {
  const std::unique_ptr<Layer> net = entry.build(in_channels, num_classes, 32, 32, {});
  std::vector<std::string> ranges;
  int first = 0;
  for (int s = 1; s <= kLargestProbed + 1; ++s) {
    bool fits = false;
    if (s <= kLargestProbed) {
      try {
        fits = net->output_shape({1, in_channels, s, s}) == Shape{1, num_classes};
      } catch (const Error&) {
        fits = false;
      }
    }
    if (fits && first == 0) first = s;
    if (!fits && first != 0) {
      ranges.push_back(first == s - 1 ? std::to_string(first) : fmt::format("{} to {}", first, s - 1));
      first = 0;
    }
  }
  if (ranges.empty()) return fmt::format("no height and width up to {}", kLargestProbed);
  return fmt::format("height and width each {}", fmt::join(ranges, ", "));
}

}  // namespace

std::vector<std::string> model_names() {
  std::vector<std::string> names;
  for (const ZooEntry& e : kZoo) names.emplace_back(e.name);
  return names;
}

Model build_model(std::string_view name, int in_channels, int num_classes, int height, int width,
                  const BatchNormFactory& make_batchnorm, bool new_head) {
  if (onnx::is_onnx_path(name)) {  // a model from a file: layers/onnx/onnx_model.h
    ENGINE_CHECK(in_channels > 0 && num_classes > 0 && height > 0 && width > 0,
                 "{}: bad sizes: in_channels {}, num_classes {}, input {}x{}", name, in_channels, num_classes,
                 height, width);
    return onnx::import_model(std::string(name), {.sample_shape = {in_channels, height, width},
                                                  .num_classes = num_classes,
                                                  .bound_inputs = {},
                                                  .first_output_only = false,
                                                  .make_batchnorm = make_batchnorm,
                                                  .new_head = new_head});
  }
  ENGINE_CHECK(!new_head,
               "--new-head replaces the classifier of an ONNX file's model; {} is built here, with "
               "the data's classes already",
               name);
  const ZooEntry* entry = nullptr;
  for (const ZooEntry& e : kZoo) {
    if (name == e.name) entry = &e;
  }
  ENGINE_CHECK(entry != nullptr, "unknown model '{}'; the known models are: {}", name,
               fmt::join(model_names(), ", "));
  ENGINE_CHECK(in_channels > 0 && num_classes > 0 && height > 0 && width > 0,
               "{}: bad sizes: in_channels {}, num_classes {}, input {}x{}", name, in_channels, num_classes,
               height, width);
  Model model(std::string(name), entry->build(in_channels, num_classes, height, width, make_batchnorm),
              {in_channels, height, width});
  Shape out;
  try {
    out = model.output_shape({1, in_channels, height, width});
  } catch (const Error& e) {
    ENGINE_FAIL(
        "{} does not accept {}x{}x{} inputs (channels x height x width): it takes {} (folder "
        "datasets: --image-size), and resnet18 takes any size; {}",
        name, in_channels, height, width, accepted_sizes(*entry, in_channels, num_classes), e.what());
  }
  ENGINE_CHECK(out == (Shape{1, num_classes}), "{} on {}x{}x{} inputs gives {}, not [1, {}] (a bug)", name,
               in_channels, height, width, shape_str(out), num_classes);
  return model;
}

}  // namespace engine::layers
