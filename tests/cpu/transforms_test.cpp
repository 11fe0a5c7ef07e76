// CPU transforms: crop and flip on a small image worked out by hand, the fast row-wise path against the
// per-pixel definition in data/augment_params.h (which the CUDA kernel evaluates), the draws' statistics,
// determinism, normalization by hand, and the per-channel statistics function.

#include "data/transforms.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "core/tensor.h"
#include "data/augment_params.h"

namespace engine::data {
namespace {

// The first sample index whose draw is `want` (the draws are a fixed function of the index).
std::int64_t find_sample(const Transform& t, AugmentDraw want) {
  for (std::int64_t i = 0; i < 100000; ++i) {
    const AugmentDraw d = t.draw(0, i);
    if (d.dx == want.dx && d.dy == want.dy && d.flip == want.flip) return i;
  }
  ADD_FAILURE() << "no sample draws dx " << want.dx << " dy " << want.dy << " flip " << want.flip;
  return 0;
}

// Applies the transform to one single-channel 4x4 image, values 1..16 row-major, with padding 1 and no
// normalization (out = x / 255), and returns the output scaled back to integers.
std::vector<int> crop_flip_4x4(AugmentDraw want) {
  TransformConfig cfg;
  cfg.random_crop = true;
  cfg.random_flip = true;
  cfg.crop_padding = 1;
  cfg.seed = 7;
  Transform t(cfg);
  std::vector<std::uint8_t> image(16);
  for (int i = 0; i < 16; ++i) image[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(i + 1);
  std::vector<float> out(16, -1.0f);
  t.apply(image.data(), 1, 4, 4, find_sample(t, want), 0, out.data());
  std::vector<int> values;
  for (float v : out) {
    const int x = static_cast<int>(std::lround(v * 255.0f));
    EXPECT_EQ(v, static_cast<float>(x) / 255.0f) << "out = x / 255 exactly";
    values.push_back(x);
  }
  return values;
}

TEST(Transforms, CropAndFlipByHand) {
  // Image:  1  2  3  4      padded by 1, a 4x4 window at (dx, dy) of the 6x6 padded image,
  //         5  6  7  8      then mirrored left-right when flip.
  //         9 10 11 12
  //        13 14 15 16
  EXPECT_EQ(crop_flip_4x4({1, 1, false}),
            (std::vector<int>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}));
  EXPECT_EQ(crop_flip_4x4({0, 0, false}),
            (std::vector<int>{0, 0, 0, 0, 0, 1, 2, 3, 0, 5, 6, 7, 0, 9, 10, 11}));
  EXPECT_EQ(crop_flip_4x4({2, 1, false}),
            (std::vector<int>{2, 3, 4, 0, 6, 7, 8, 0, 10, 11, 12, 0, 14, 15, 16, 0}));
  EXPECT_EQ(crop_flip_4x4({1, 1, true}),
            (std::vector<int>{4, 3, 2, 1, 8, 7, 6, 5, 12, 11, 10, 9, 16, 15, 14, 13}));
  EXPECT_EQ(crop_flip_4x4({2, 2, true}),
            (std::vector<int>{0, 8, 7, 6, 0, 12, 11, 10, 0, 16, 15, 14, 0, 0, 0, 0}));
  EXPECT_EQ(crop_flip_4x4({0, 2, true}),
            (std::vector<int>{7, 6, 5, 0, 11, 10, 9, 0, 15, 14, 13, 0, 0, 0, 0, 0}));
}

// The definition, pixel by pixel, exactly as the CUDA kernel computes it.
std::vector<float> reference(const Transform& t, const std::vector<std::uint8_t>& image, int c_count, int h,
                             int w, std::int64_t sample, std::uint64_t epoch) {
  const AugmentDraw d = t.draw(epoch, sample);
  const std::int32_t pad = t.config().crop_padding;
  std::vector<float> out;
  for (int c = 0; c < c_count; ++c) {
    for (int y = 0; y < h; ++y) {
      for (int x = 0; x < w; ++x) {
        const int sy = source_y(y, d, pad), sx = source_x(x, w, d, pad);
        const bool inside = sy >= 0 && sy < h && sx >= 0 && sx < w;
        const std::uint8_t v =
            inside ? image[static_cast<std::size_t>((c * h + sy) * w + sx)] : std::uint8_t{0};
        out.push_back(normalize_value(v, t.mean(c), t.std_dev(c)));
      }
    }
  }
  return out;
}

TEST(Transforms, FastPathEqualsPerPixelDefinition) {
  const struct {
    int c, h, w, pad;
  } shapes[] = {{3, 32, 32, 4}, {3, 7, 9, 4}, {1, 5, 3, 0}, {2, 4, 6, 7}, {3, 1, 1, 2}, {1, 28, 28, 2}};
  std::uint32_t state = 12345;
  for (const auto& s : shapes) {
    std::vector<float> mean, std_dev;
    for (int c = 0; c < s.c; ++c) {
      mean.push_back(0.3f + 0.1f * static_cast<float>(c));
      std_dev.push_back(0.2f + 0.05f * static_cast<float>(c));
    }
    const Transform t(TransformConfig::train(mean, std_dev, /*seed=*/11, s.pad));
    std::vector<std::uint8_t> image(static_cast<std::size_t>(s.c * s.h * s.w));
    for (auto& v : image) v = static_cast<std::uint8_t>((state = state * 1664525u + 1013904223u) >> 24);
    for (std::int64_t sample = 0; sample < 200; ++sample) {
      std::vector<float> out(image.size(), std::nanf(""));
      t.apply(image.data(), s.c, s.h, s.w, sample, 3, out.data());
      const std::vector<float> want = reference(t, image, s.c, s.h, s.w, sample, 3);
      ASSERT_EQ(0, std::memcmp(out.data(), want.data(), out.size() * sizeof(float)))
          << "shape " << s.c << "x" << s.h << "x" << s.w << " pad " << s.pad << " sample " << sample;
    }
  }
}

TEST(Transforms, DrawStatisticsMatchTheirProbabilities) {
  const Transform t(TransformConfig::train({}, {}, /*seed=*/2024, /*pad=*/4));
  const int n = 90000;
  std::vector<int> dx(9, 0), dy(9, 0), joint(81, 0);
  int flips = 0;
  for (int i = 0; i < n; ++i) {
    const AugmentDraw d = t.draw(1, i);
    ASSERT_TRUE(d.dx >= 0 && d.dx <= 8 && d.dy >= 0 && d.dy <= 8);
    ++dx[static_cast<std::size_t>(d.dx)];
    ++dy[static_cast<std::size_t>(d.dy)];
    ++joint[static_cast<std::size_t>(d.dy * 9 + d.dx)];
    flips += d.flip ? 1 : 0;
  }
  // Each offset: n/9 = 10000, sigma = sqrt(n p (1-p)) ~ 94.3.
  const double sigma = std::sqrt(n * (1.0 / 9) * (8.0 / 9));
  double chi_dx = 0, chi_dy = 0, chi_joint = 0;
  for (int b = 0; b < 9; ++b) {
    EXPECT_NEAR(dx[static_cast<std::size_t>(b)], n / 9.0, 5 * sigma) << "dx " << b;
    EXPECT_NEAR(dy[static_cast<std::size_t>(b)], n / 9.0, 5 * sigma) << "dy " << b;
    chi_dx += std::pow(dx[static_cast<std::size_t>(b)] - n / 9.0, 2) / (n / 9.0);
    chi_dy += std::pow(dy[static_cast<std::size_t>(b)] - n / 9.0, 2) / (n / 9.0);
  }
  for (int b = 0; b < 81; ++b)
    chi_joint += std::pow(joint[static_cast<std::size_t>(b)] - n / 81.0, 2) / (n / 81.0);
  // Chi-square critical values at p = 1e-6: 8 degrees of freedom 42.8; 80 degrees of freedom ~ 148.
  EXPECT_LT(chi_dx, 42.8);
  EXPECT_LT(chi_dy, 42.8);
  EXPECT_LT(chi_joint, 148.0) << "dx and dy independent and uniform";
  EXPECT_NEAR(flips, n / 2.0, 5 * std::sqrt(n * 0.25));
}

TEST(Transforms, NoCropNoFlipIsIdentity) {
  const Transform t(TransformConfig::eval({}, {}));
  for (std::int64_t i = 0; i < 100; ++i) {
    const AugmentDraw d = t.draw(4, i);
    EXPECT_EQ(d.dx, 0);
    EXPECT_EQ(d.dy, 0);
    EXPECT_FALSE(d.flip);
  }
  std::vector<std::uint8_t> image = {0, 1, 2, 254, 255, 128};
  std::vector<float> out(6);
  t.apply(image.data(), 1, 2, 3, 0, 0, out.data());
  for (std::size_t i = 0; i < 6; ++i) EXPECT_EQ(out[i], static_cast<float>(image[i]) / 255.0f);
}

TEST(Transforms, SameSeedEpochIndexGiveTheSameSample) {
  const Transform a(TransformConfig::train({0.5f}, {0.25f}, 3)),
      b(TransformConfig::train({0.5f}, {0.25f}, 3));
  const Transform other_seed(TransformConfig::train({0.5f}, {0.25f}, 4));
  int epoch_differs = 0, seed_differs = 0;
  for (std::int64_t i = 0; i < 200; ++i) {
    const AugmentDraw x = a.draw(5, i), y = b.draw(5, i), z = a.draw(6, i), w = other_seed.draw(5, i);
    EXPECT_TRUE(x.dx == y.dx && x.dy == y.dy && x.flip == y.flip);
    epoch_differs += (x.dx != z.dx || x.dy != z.dy || x.flip != z.flip) ? 1 : 0;
    seed_differs += (x.dx != w.dx || x.dy != w.dy || x.flip != w.flip) ? 1 : 0;
  }
  EXPECT_GT(epoch_differs, 150);
  EXPECT_GT(seed_differs, 150);

  // In a batch, an image's output depends on its sample id, not on its position.
  std::vector<std::uint8_t> pixels(2 * 3 * 4 * 4);
  for (std::size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<std::uint8_t>(i * 37);
  const Transform t(TransformConfig::train({0.4f, 0.5f, 0.6f}, {0.2f, 0.3f, 0.4f}, 9, 2));
  Tensor images = Tensor::from_vector(pixels, {2, 3, 4, 4});
  std::vector<std::uint8_t> swapped(pixels.begin() + 48, pixels.end());
  swapped.insert(swapped.end(), pixels.begin(), pixels.begin() + 48);
  Tensor images_swapped = Tensor::from_vector(swapped, {2, 3, 4, 4});
  Tensor out = Tensor::empty({2, 3, 4, 4}, DType::F32), out_swapped = Tensor::empty({2, 3, 4, 4}, DType::F32);
  t.apply_batch(images, Tensor::from_vector<std::int32_t>({10, 20}, {2}), 1, out);
  t.apply_batch(images_swapped, Tensor::from_vector<std::int32_t>({20, 10}, {2}), 1, out_swapped);
  const std::vector<float> o = out.to_vector<float>(), s = out_swapped.to_vector<float>();
  EXPECT_TRUE(std::equal(o.begin(), o.begin() + 48, s.begin() + 48));
  EXPECT_TRUE(std::equal(o.begin() + 48, o.end(), s.begin()));
}

TEST(Transforms, NormalizeByHand) {
  // Channel 0: mean 0.5, std 0.25; channel 1: mean 0.25, std 0.5. No crop, no flip.
  const Transform t(TransformConfig::eval({0.5f, 0.25f}, {0.25f, 0.5f}));
  std::vector<std::uint8_t> image = {255, 0, 51, 102, 0, 255};  // 2 channels of 1x3
  std::vector<float> out(6);
  t.apply(image.data(), 2, 1, 3, 0, 0, out.data());
  EXPECT_EQ(out[0], 2.0f);            // (1 - 0.5) / 0.25
  EXPECT_EQ(out[1], -2.0f);           // (0 - 0.5) / 0.25
  EXPECT_NEAR(out[2], -1.2f, 1e-6f);  // (0.2 - 0.5) / 0.25
  EXPECT_NEAR(out[3], 0.3f, 1e-6f);   // (0.4 - 0.25) / 0.5
  EXPECT_EQ(out[4], -0.5f);           // (0 - 0.25) / 0.5
  EXPECT_EQ(out[5], 1.5f);            // (1 - 0.25) / 0.5
  // torchvision's operation order, each step rounded to float: ToTensor's x / 255, then (v - mean) / std.
  const float v = 51.0f / 255.0f;
  EXPECT_EQ(out[2], (v - 0.5f) / 0.25f);

  // Padding pixels are the normalized zero: -mean / std.
  const Transform padded(TransformConfig::train({0.5f}, {0.25f}, 1, /*pad=*/1));
  const std::int64_t corner = find_sample(padded, {0, 0, false});
  std::vector<std::uint8_t> one = {200, 200, 200, 200};
  std::vector<float> got(4);
  padded.apply(one.data(), 1, 2, 2, corner, 0, got.data());
  EXPECT_EQ(got[0], -2.0f);
  EXPECT_EQ(got[1], -2.0f);
  EXPECT_EQ(got[2], -2.0f);
  EXPECT_EQ(got[3], (200.0f / 255.0f - 0.5f) / 0.25f);
}

TEST(Transforms, ChannelMeanStdByHand) {
  Dataset d;
  d.channels = 2;
  d.height = 1;
  d.width = 2;
  d.class_names = {"a", "b"};
  d.labels = {0, 1};
  // Image 0: channel 0 = {0, 255}, channel 1 = {51, 51}; image 1: channel 0 = {255, 255}, channel 1 = {102,
  // 102}.
  d.images = {0, 255, 51, 51, 255, 255, 102, 102};
  const ChannelStats s = channel_mean_std(d);
  ASSERT_EQ(s.mean.size(), 2u);
  // Channel 0: values {0, 1, 1, 1}: mean 0.75, variance 0.75 - 0.5625 = 0.1875.
  EXPECT_NEAR(s.mean[0], 0.75f, 1e-7f);
  EXPECT_NEAR(s.std[0], std::sqrt(0.1875f), 1e-7f);
  // Channel 1: values {0.2, 0.2, 0.4, 0.4}: mean 0.3, std 0.1.
  EXPECT_NEAR(s.mean[1], 0.3f, 1e-7f);
  EXPECT_NEAR(s.std[1], 0.1f, 1e-7f);

  Dataset empty = d;
  empty.images.clear();
  empty.labels.clear();
  EXPECT_THROW(channel_mean_std(empty), Error);
}

TEST(Transforms, BadConfigurationsThrow) {
  TransformConfig c = TransformConfig::eval({0.5f, 0.5f}, {0.2f});
  EXPECT_THROW(Transform{c}, Error);
  EXPECT_THROW(Transform{TransformConfig::eval({0.5f}, {0.0f})}, Error);
  EXPECT_THROW(Transform{TransformConfig::eval({0.5f}, {-1.0f})}, Error);
  EXPECT_THROW(Transform{TransformConfig::eval({0.5f}, {std::nanf("")})}, Error);
  EXPECT_THROW(Transform{TransformConfig::train({}, {}, 0, -1)}, Error);
  const Transform three(TransformConfig::eval({0.1f, 0.2f, 0.3f}, {1.0f, 1.0f, 1.0f}));
  std::vector<std::uint8_t> image(4);
  std::vector<float> out(4);
  EXPECT_THROW(three.apply(image.data(), 1, 2, 2, 0, 0, out.data()), Error);
}

// airbench94's flip-translate (TransformConfig::flip_translate): reflection padding worked out by hand,
// against an independent oracle (pad the image explicitly as F.pad(mode='reflect') does, cut the window,
// mirror it), and the alternating flip's law.

// The 4x4 image 1..16 through flip-translate with padding 1 and draw `want` (found at epoch `epoch`).
std::vector<int> flip_translate_4x4(AugmentDraw want, std::uint64_t epoch) {
  Transform t(TransformConfig::flip_translate({}, {}, /*seed=*/7, /*pad=*/1));
  std::int64_t sample = -1;
  for (std::int64_t i = 0; i < 100000 && sample < 0; ++i) {
    const AugmentDraw d = t.draw(epoch, i);
    if (d.dx == want.dx && d.dy == want.dy && d.flip == want.flip) sample = i;
  }
  EXPECT_GE(sample, 0) << "no sample draws that";
  std::vector<std::uint8_t> image(16);
  for (int i = 0; i < 16; ++i) image[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(i + 1);
  std::vector<float> out(16, -1.0f);
  t.apply(image.data(), 1, 4, 4, sample, epoch, out.data());
  std::vector<int> values;
  for (float v : out) values.push_back(static_cast<int>(std::lround(v * 255.0f)));
  return values;
}

TEST(FlipTranslate, ReflectionPaddingByHand) {
  // Reflection-padded by 1 (the edge is not repeated):   6  5  6  7  8  7
  //                                                       2  1  2  3  4  3
  //                                                       6  5  6  7  8  7
  //                                                      10  9 10 11 12 11
  //                                                      14 13 14 15 16 15
  //                                                      10  9 10 11 12 11
  EXPECT_EQ(flip_translate_4x4({0, 0, false}, 0),
            (std::vector<int>{6, 5, 6, 7, 2, 1, 2, 3, 6, 5, 6, 7, 10, 9, 10, 11}));
  EXPECT_EQ(flip_translate_4x4({2, 1, false}, 0),
            (std::vector<int>{2, 3, 4, 3, 6, 7, 8, 7, 10, 11, 12, 11, 14, 15, 16, 15}));
  EXPECT_EQ(flip_translate_4x4({1, 2, true}, 1),
            (std::vector<int>{8, 7, 6, 5, 12, 11, 10, 9, 16, 15, 14, 13, 12, 11, 10, 9}));
  // The window at padded column 0 (dx = 0), mirrored: its last column is the reflected one.
  EXPECT_EQ(flip_translate_4x4({0, 1, true}, 1),
            (std::vector<int>{3, 2, 1, 2, 7, 6, 5, 6, 11, 10, 9, 10, 15, 14, 13, 14}));
}

TEST(FlipTranslate, EqualsPadReflectCropMirror) {
  const struct {
    int c, h, w, pad;
  } shapes[] = {{3, 32, 32, 2}, {3, 7, 9, 4}, {1, 5, 3, 2}, {2, 4, 6, 3}, {1, 2, 2, 1}};
  std::uint32_t state = 777;
  for (const auto& s : shapes) {
    const Transform t(TransformConfig::flip_translate({}, {}, /*seed=*/5, s.pad));
    std::vector<std::uint8_t> image(static_cast<std::size_t>(s.c * s.h * s.w));
    for (auto& v : image) v = static_cast<std::uint8_t>((state = state * 1664525u + 1013904223u) >> 24);
    // The padded image, built the way torch.nn.functional.pad(x, (p, p, p, p), mode='reflect') defines it.
    const int ph = s.h + 2 * s.pad, pw = s.w + 2 * s.pad;
    auto reflect = [](int i, int n) { return i < 0 ? -i : (i >= n ? 2 * n - 2 - i : i); };
    std::vector<std::uint8_t> padded(static_cast<std::size_t>(s.c * ph * pw));
    for (int c = 0; c < s.c; ++c) {
      for (int y = 0; y < ph; ++y) {
        for (int x = 0; x < pw; ++x) {
          padded[static_cast<std::size_t>((c * ph + y) * pw + x)] = image[static_cast<std::size_t>(
              (c * s.h + reflect(y - s.pad, s.h)) * s.w + reflect(x - s.pad, s.w))];
        }
      }
    }
    for (std::uint64_t epoch : {0u, 1u}) {
      for (std::int64_t sample = 0; sample < 100; ++sample) {
        const AugmentDraw d = t.draw(epoch, sample);
        std::vector<float> out(image.size(), std::nanf(""));
        t.apply(image.data(), s.c, s.h, s.w, sample, epoch, out.data());
        for (int c = 0; c < s.c; ++c) {
          for (int y = 0; y < s.h; ++y) {
            for (int x = 0; x < s.w; ++x) {
              const int wx = d.flip ? s.w - 1 - x : x;  // the window, mirrored when flipped
              const std::uint8_t v = padded[static_cast<std::size_t>((c * ph + y + d.dy) * pw + wx + d.dx)];
              ASSERT_EQ(out[static_cast<std::size_t>((c * s.h + y) * s.w + x)],
                        static_cast<float>(v) / 255.0f)
                  << "shape " << s.c << "x" << s.h << "x" << s.w << " pad " << s.pad << " sample " << sample;
            }
          }
        }
      }
    }
  }
}

TEST(FlipTranslate, FlipAlternatesByEpochWithARandomPhasePerImage) {
  const Transform t(TransformConfig::flip_translate({}, {}, /*seed=*/99, 2));
  int flipped_at_0 = 0;
  const int n = 2000;
  for (std::int64_t i = 0; i < n; ++i) {
    const bool f0 = t.draw(0, i).flip;
    flipped_at_0 += f0 ? 1 : 0;
    for (std::uint64_t e = 1; e < 6; ++e) EXPECT_EQ(t.draw(e, i).flip, f0 != (e % 2 == 1)) << i << " " << e;
  }
  // The phase is a fair coin per image: 1000 +- 4.5 sigma (sigma = sqrt(2000)/2 = 22.4).
  EXPECT_NEAR(flipped_at_0, static_cast<double>(n) / 2, 100);
  // Another seed gives other phases; the translation still spans [0, 2*pad] in both axes.
  const Transform other(TransformConfig::flip_translate({}, {}, /*seed=*/100, 2));
  int differ = 0, dx_max = 0, dy_max = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    differ += other.draw(0, i).flip != t.draw(0, i).flip ? 1 : 0;
    dx_max = std::max(dx_max, t.draw(3, i).dx);
    dy_max = std::max(dy_max, t.draw(3, i).dy);
  }
  EXPECT_NEAR(differ, static_cast<double>(n) / 2, 100);
  EXPECT_EQ(dx_max, 4);
  EXPECT_EQ(dy_max, 4);
}

TEST(FlipTranslate, FixedViewsForTestTimeAugmentation) {
  std::vector<std::uint8_t> image(16);
  for (int i = 0; i < 16; ++i) image[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(i + 1);
  const auto view = [&](std::int32_t dx, std::int32_t dy, bool flip, std::int64_t sample,
                        std::uint64_t epoch) {
    const Transform t(TransformConfig::view({}, {}, 1, dx, dy, flip));
    std::vector<float> out(16);
    t.apply(image.data(), 1, 4, 4, sample, epoch, out.data());
    std::vector<int> values;
    for (float v : out) values.push_back(static_cast<int>(std::lround(v * 255.0f)));
    return values;
  };
  // The mirror (window at (1, 1) of the reflection-padded image), whatever the sample and epoch.
  const std::vector<int> mirror = {4, 3, 2, 1, 8, 7, 6, 5, 12, 11, 10, 9, 16, 15, 14, 13};
  EXPECT_EQ(view(1, 1, true, 0, 0), mirror);
  EXPECT_EQ(view(1, 1, true, 12345, 7), mirror);
  // Shifted down-right by one (airbench's padded[0:32, 0:32]): see ReflectionPaddingByHand's padded image.
  EXPECT_EQ(view(0, 0, false, 3, 1), (std::vector<int>{6, 5, 6, 7, 2, 1, 2, 3, 6, 5, 6, 7, 10, 9, 10, 11}));
  EXPECT_THROW(Transform(TransformConfig::view({}, {}, 1, 3, 0, false)), Error);
}

TEST(FlipTranslate, ReflectionWiderThanTheImageIsRefused) {
  const Transform t(TransformConfig::flip_translate({}, {}, 1, /*pad=*/3));
  std::vector<std::uint8_t> image(9);
  std::vector<float> out(9);
  EXPECT_THROW(t.apply(image.data(), 1, 3, 3, 0, 0, out.data()), Error);
}

}  // namespace
}  // namespace engine::data
