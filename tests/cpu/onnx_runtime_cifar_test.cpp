// onnxruntime over the whole CIFAR-10 test set: cnn3 (the zoo's conv-BN-ReLU-pool model, fused as it
// trains), trained briefly on CIFAR-10's training images, exported by the engine and run by onnxruntime's
// CPU provider on the same 10,000 float32 test images, gives the engine's top-1 on every image, or a
// disagreement that is a float32 near-tie (below). Skips without CIFAR-10, onnxruntime or libonnx.
//
// Near-tie: two float32 evaluations of the same network that sum in other orders differ per logit by at
// most about fan_in * 2^-24 of the logits' scale (tests/cpu/onnx_runtime_test.cpp, whose measured
// differences are far inside it); call that bound B. If every logit of both is within B of the other's, the
// two can rank classes i and j differently only where the engine's own margin z_i - z_j is at most 2B. A
// disagreement on an image whose margin exceeds 2B is a failure, as is any logit farther than B apart.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "data/cifar10.h"
#include "layers/models.h"
#include "layers/onnx/onnx_model.h"
#include "layers/softmax_cross_entropy.h"
#include "optim/sgd.h"
#include "tests/common/environment.h"
#include "tests/common/onnx_skip.h"
#include "tests/common/pytorch_tools.h"
#include "tests/common/scratch_dirs.h"
#include "tests/cpu/layer_test_util.h"

namespace engine::layers {
namespace {

constexpr int kClasses = 10, kImage = 3 * 32 * 32;

// Images [first, first + n) of `d` as float32 [n, 3, 32, 32], (x / 255 - 0.5) / 0.25.
std::vector<float> images(const data::Dataset& d, std::int64_t first, std::int64_t n) {
  std::vector<float> out(static_cast<std::size_t>(n * kImage));
  for (std::int64_t i = 0; i < n; ++i) {
    const std::uint8_t* p = d.image(first + i);
    for (int k = 0; k < kImage; ++k)
      out[static_cast<std::size_t>(i * kImage + k)] = (static_cast<float>(p[k]) / 255.0f - 0.5f) / 0.25f;
  }
  return out;
}

Tensor batch_of(const std::vector<float>& values, std::int64_t n) {
  return Tensor::from_vector(values, {n, 3, 32, 32});
}

int argmax(const float* z) { return static_cast<int>(std::max_element(z, z + kClasses) - z); }

TEST(OnnxRuntimeCifar10, SameTop1AsTheEngineOnTheWholeTestSet) {
  SKIP_WITHOUT_ONNX();
  const std::string root = engine::testing::cifar10_dir();
  if (root.empty()) GTEST_SKIP() << "CIFAR-10 not found (shared/data/cifar10 or $CIFAR10_DIR): skipped";
  SKIP_WITHOUT_PYTHON_MODULES("onnxruntime", "numpy");
  const data::Dataset train = data::load_cifar10(root, data::Split::Train);
  const data::Dataset test = data::load_cifar10(root, data::Split::Test);
  ASSERT_EQ(test.size(), 10000);

  // Trained briefly (40 steps of 64 images, lr 0.02, momentum 0.9): weights and running statistics that
  // classify, so top-1 means something; BatchNorm+ReLU fused as cnn_train runs it.
  Model model = build_model("cnn3", 3, kClasses, 32, 32);
  model.finalize(testing::cpu_context(), 3);
  SoftmaxCrossEntropy loss;
  optim::Sgd sgd(model, optim::SgdConfig{.momentum = 0.9, .weight_decay = 5e-4});
  const std::int64_t batch = 64;
  for (std::int64_t step = 0; step < 40; ++step) {
    const std::vector<std::int32_t> labels(train.labels.begin() + step * batch,
                                           train.labels.begin() + (step + 1) * batch);
    loss.forward(model.context(),
                 model.forward(batch_of(images(train, step * batch, batch), batch), Mode::Train),
                 Tensor::from_vector(labels, {batch}));
    model.backward(loss.backward());
    sgd.step(0.02);
  }

  const auto dir = engine::testing::scratch_dir("onnxruntime_cifar10_", "cnn3");
  const std::string path = (dir / "model.onnx").string(), input = (dir / "test.f32").string(),
                    output = (dir / "logits.f32").string();
  onnx::export_model(model, path);
  const std::vector<float> x = images(test, 0, test.size());
  {
    std::ofstream f(input, std::ios::binary);
    f.write(reinterpret_cast<const char*>(x.data()), static_cast<std::streamsize>(x.size() * sizeof(float)));
    ASSERT_TRUE(f.good()) << "cannot write " << input;
  }
  std::vector<float> ours;
  const std::int64_t chunk = 500;
  for (std::int64_t first = 0; first < test.size(); first += chunk) {
    const std::vector<float> part(x.begin() + first * kImage, x.begin() + (first + chunk) * kImage);
    const Tensor z = model.forward(batch_of(part, chunk), Mode::Inference);
    ours.insert(ours.end(), z.data<float>(), z.data<float>() + chunk * kClasses);
  }
  const std::string ran = engine::testing::command_output(
      engine::testing::pytorch_python() + " " + engine::testing::repo_root().string() +
      "/tests/python/onnxruntime_logits.py " + path + " " + input + " 10000 3 32 32 " + output + " 2>&1");
  std::vector<float> theirs(ours.size());
  {
    std::ifstream f(output, std::ios::binary);
    f.read(reinterpret_cast<char*>(theirs.data()),
           static_cast<std::streamsize>(theirs.size() * sizeof(float)));
    ASSERT_TRUE(f.good()) << "onnxruntime wrote no logits: " << ran;
  }

  double scale = 0.0, worst = 0.0;
  for (std::size_t i = 0; i < ours.size(); ++i) {
    scale = std::max(scale, std::abs(static_cast<double>(ours[i])));
    worst = std::max(worst, std::abs(static_cast<double>(ours[i]) - static_cast<double>(theirs[i])));
  }
  const int fan_in = 4096;  // cnn3's widest sum: its first linear layer (256 x 4 x 4 inputs)
  const double bound = fan_in * std::ldexp(1.0, -24) * scale;
  EXPECT_LE(worst, bound) << "a logit differs by more than float32's summation bound";
  int disagree = 0, near_ties = 0, correct = 0, agree_correct = 0;
  for (std::int64_t i = 0; i < test.size(); ++i) {
    const float* a = ours.data() + i * kClasses;
    const float* b = theirs.data() + i * kClasses;
    const int top_a = argmax(a), top_b = argmax(b);
    correct += top_a == test.labels[static_cast<std::size_t>(i)];
    agree_correct += top_b == test.labels[static_cast<std::size_t>(i)];
    if (top_a == top_b) continue;
    ++disagree;
    const double margin = static_cast<double>(a[top_a]) - static_cast<double>(a[top_b]);
    if (margin <= 2.0 * bound) {
      ++near_ties;
    } else {
      ADD_FAILURE() << "test image " << i << ": engine says class " << top_a << ", onnxruntime " << top_b
                    << ", with an engine margin of " << margin << " (near-tie bound " << 2.0 * bound << ")";
    }
  }
  std::printf(
      "onnxruntime vs engine on CIFAR-10's 10000 test images (cnn3, 40 steps): top-1 accuracy %.2f%% / "
      "%.2f%%, %d disagreements (%d float32 near-ties, margin <= %.3g), worst logit difference %.3g of "
      "%.3g\n",
      correct / 100.0, agree_correct / 100.0, disagree, near_ties, 2.0 * bound, worst, scale);
  EXPECT_EQ(disagree, near_ties);
  EXPECT_GT(correct, 2000) << "40 steps should classify better than chance (10%): the model did not train";
}

}  // namespace
}  // namespace engine::layers
