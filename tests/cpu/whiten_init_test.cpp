// --whiten-init (apps/train/whiten_init.h): the first Conv2d of a model, run forward on the normalized
// training images, gives outputs whose second moment is diag(lambda / (lambda + eps)) (the whitening, seen
// through the layer itself), its second half the negatives; the refusals name the flag; cnn_train refuses a
// model whose first convolution cannot whiten.

#include "apps/train/whiten_init.h"

#include <memory>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "layers/linear.h"
#include "layers/patch_whitening.h"
#include "tests/cpu/cnn_train_test_util.h"
#include "tests/cpu/layer_test_util.h"

namespace engine::apps {
namespace {

using layers::testing::cpu_context;
using layers::testing::host_tensor;
using layers::testing::host_values;
using layers::testing::set_values;

// `count` random 3x6x6 images (uint8) with per-channel statistics.
TrainData random_train_data(int count, unsigned seed) {
  TrainData d;
  d.train.channels = 3;
  d.train.height = 6;
  d.train.width = 6;
  d.train.class_names = {"a", "b"};
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> byte(0, 255);
  for (int i = 0; i < count; ++i) {
    for (int p = 0; p < 3 * 36; ++p) {
      d.train.images.push_back(static_cast<std::uint8_t>(byte(gen)));
    }
    d.train.labels.push_back(i % 2);
  }
  d.mean = {0.4f, 0.5f, 0.6f};
  d.std = {0.2f, 0.25f, 0.3f};
  return d;
}

layers::Model conv_model(int out_channels, int kernel, DType dtype) {
  auto net = std::make_unique<layers::Sequential>();
  net->emplace<layers::Conv2d>(
      layers::Conv2dOptions{.in_channels = 3, .out_channels = out_channels, .kernel_size = kernel});
  layers::Model m("whiten_net", std::move(net), {3, 6, 6});
  m.finalize(cpu_context(dtype), /*init_seed=*/3);
  return m;
}

TEST(WhitenInit, FirstConvOutputsAreWhitenedTrainingPatches) {
  const int images = 5, d = 12;
  const TrainData data = random_train_data(8, 21);
  layers::Model m = conv_model(2 * d, 2, DType::F64);
  const std::vector<double> before = host_values(m.parameters()[0].value);
  const std::string note = apply_whiten_init(m, data, images);
  EXPECT_NE(note.find("--whiten-init 5: 0.weight"), std::string::npos) << note;
  EXPECT_NE(host_values(m.parameters()[0].value), before);
  set_values(m.parameters()[1].value, std::vector<double>(2 * d, 0.0));  // the bias out of the way

  // The first `images` images normalized as the loader does, through the layer.
  std::vector<double> x;
  std::vector<float> xf;
  for (int n = 0; n < images; ++n) {
    for (int i = 0; i < 3 * 36; ++i) {
      const float v =
          (static_cast<float>(data.train.image(n)[i]) / 255.0f - data.mean[i / 36]) / data.std[i / 36];
      x.push_back(static_cast<double>(v));
      xf.push_back(v);
    }
  }
  const std::vector<double> y =
      host_values(m.forward(host_tensor(x, {images, 3, 6, 6}, DType::F64), layers::Mode::Inference));
  ASSERT_EQ(y.size(), static_cast<std::size_t>(images * 2 * d * 25));  // 5x5 outputs per 6x6 image
  std::vector<double> moment(d * d, 0.0);
  for (int n = 0; n < images; ++n) {
    for (int pos = 0; pos < 25; ++pos) {
      for (int r = 0; r < 2 * d; ++r) {
        const double yr = y[(n * 2 * d + r) * 25 + pos];
        if (r >= d) {
          EXPECT_EQ(yr, -y[(n * 2 * d + r - d) * 25 + pos]);
          continue;
        }
        for (int s = 0; s < d; ++s) moment[r * d + s] += yr * y[(n * 2 * d + s) * 25 + pos];
      }
    }
  }
  const layers::SymmetricEigen e =
      layers::symmetric_eigen(layers::patch_covariance(xf, images, 3, 6, 6, 2), d);
  for (int r = 0; r < d; ++r) {
    for (int s = 0; s < d; ++s) {
      // All float64 (the images rounded to float once, identically on both sides): rounding ~1e-12 against
      // the patches' condition number; 1e-8 is wide, and a wrong layout or normalization misses by O(0.1).
      const double expected = r == s ? e.values[r] / (e.values[r] + kWhitenEps) : 0.0;
      EXPECT_NEAR(moment[r * d + s] / (images * 25), expected, 1e-8) << r << "," << s;
    }
  }
}

TEST(WhitenInit, Float32WeightsMatchTheFloat64Ones) {
  const TrainData data = random_train_data(6, 4);
  layers::Model m64 = conv_model(24, 2, DType::F64), m32 = conv_model(24, 2, DType::F32);
  apply_whiten_init(m64, data, 6);
  apply_whiten_init(m32, data, 6);
  const std::vector<double> a = host_values(m64.parameters()[0].value),
                            b = host_values(m32.parameters()[0].value);
  ASSERT_EQ(a.size(), b.size());
  // The float32 copy is the float64 weight rounded once: relative error <= 2^-24.
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(b[i], a[i], std::abs(a[i]) * 6e-8) << i;
}

std::string refusal(layers::Model& m, const TrainData& data, std::int64_t images) {
  try {
    apply_whiten_init(m, data, images);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(WhitenInit, RefusesWhatItCannotWhiten) {
  const TrainData data = random_train_data(4, 1);
  layers::Model wrong_width = conv_model(16, 2, DType::F32);
  EXPECT_NE(refusal(wrong_width, data, 4)
                .find("--whiten-init 4: the first convolution of whiten_net (0.weight) is "
                      "3 -> 16 channels, 2x2"),
            std::string::npos)
      << refusal(wrong_width, data, 4);
  layers::Model three = conv_model(24, 3, DType::F32);  // 3x3 needs 54 outputs
  EXPECT_NE(refusal(three, data, 4).find("out = 2 * in*k*k = 54"), std::string::npos)
      << refusal(three, data, 4);
  layers::Model ok = conv_model(24, 2, DType::F32);
  EXPECT_NE(apply_whiten_init(ok, data, 5).find("patches of 4 training images (all there are)"),
            std::string::npos)
      << "more images than the training set has: all of them";
  EXPECT_NE(refusal(ok, TrainData{}, 1).find("the training set is not loaded"), std::string::npos);
  auto net = std::make_unique<layers::Sequential>();
  net->emplace<layers::Linear>(3, 2);
  layers::Model linear("linear_net", std::move(net), {3});
  linear.finalize(cpu_context(DType::F32), 1);
  EXPECT_NE(refusal(linear, data, 1).find("has no Conv2d"), std::string::npos) << refusal(linear, data, 1);
}

TEST(CnnTrainWhitenInit, RefusesAModelWhoseFirstConvCannotWhiten) {
  const std::string root = testing::tiny_folder_dataset("whiten_refuse");
  const testing::RunResult r =
      testing::run_train({"--cpu", "--dataset", "folder:" + root, "--model", "cnn3", "--epochs", "1",
                          "--batch-size", "8", "--whiten-init", "4", "--checkpoint-dir", ""});
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("--whiten-init 4: the first convolution of cnn3"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace engine::apps
