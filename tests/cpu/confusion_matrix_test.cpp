// The run's pictures (apps/pictures/confusion_matrix.h, apps/pictures/data_grid.h): the confusion matrix's
// counts, recall, JSON and bad classes; its heat map (the diagonal dark, an empty cell white, the counts
// written); the captioned contact sheet of chosen samples (the misclassified test images), its size and its
// refusals; a normalized batch in either layout back to the dataset's pixels (--tensorboard's sample grid).

#include "apps/pictures/confusion_matrix.h"

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "apps/pictures/canvas.h"
#include "apps/pictures/data_grid.h"
#include "tests/common/error_of.h"

namespace engine::apps {
namespace {

ConfusionMatrix three_classes() {
  ConfusionMatrix m(3);
  m.add(0, 0, 8);
  m.add(0, 1, 2);
  m.add(1, 1, 5);
  m.add(2, 0, 1);
  m.add(2, 2, 3);
  return m;
}

std::uint8_t pixel(const data::Image& image, int c, std::int64_t y, std::int64_t x) {
  return image.pixels[static_cast<std::size_t>((c * image.height + y) * image.width + x)];
}

TEST(ConfusionMatrix, CountsRecallAndJson) {
  ConfusionMatrix m = three_classes();
  EXPECT_EQ(m.total(), 19);
  EXPECT_EQ(m.correct(), 16);
  EXPECT_DOUBLE_EQ(m.recall(0), 0.8);
  EXPECT_DOUBLE_EQ(m.recall(1), 1.0);
  EXPECT_DOUBLE_EQ(m.recall(2), 0.75);
  ConfusionMatrix other(3);
  other.add(1, 2);
  m.add(other);
  EXPECT_EQ(m.count(1, 2), 1);
  EXPECT_DOUBLE_EQ(m.recall(1), 5.0 / 6.0);
  EXPECT_DOUBLE_EQ(ConfusionMatrix(2).recall(0), 0.0);  // no samples of the class

  const nlohmann::json j = nlohmann::json::parse(m.to_json({"cat", "dog", "a \"bird\""}));
  EXPECT_EQ(j["classes"], nlohmann::json({"cat", "dog", "a \"bird\""}));
  EXPECT_EQ(j["counts"], nlohmann::json({{8, 2, 0}, {0, 5, 1}, {1, 0, 3}}));
  EXPECT_EQ(nlohmann::json::parse(ConfusionMatrix(2).to_json({}))["classes"], nlohmann::json({"0", "1"}));
}

TEST(ConfusionMatrix, RefusesClassesOutsideItsRange) {
  ConfusionMatrix m(3);
  EXPECT_NE(
      testing::error_of([&] { m.add(3, 0); }).find("confusion matrix of 3 classes: class 3 predicted as 0"),
      std::string::npos);
  EXPECT_NE(testing::error_of([&] { m.add(0, -1); }).find("class 0 predicted as -1"), std::string::npos);
  EXPECT_NE(testing::error_of([&] { m.add(ConfusionMatrix(4)); }).find("of 4 classes to one of 3"),
            std::string::npos);
  EXPECT_NE(testing::error_of([] { ConfusionMatrix bad(0); }).find("of 0 classes"), std::string::npos);
}

// The cells' centres are found from the picture itself: the darkest pixel of the picture lies in a diagonal
// cell (every row's largest share is its diagonal), and an empty cell's area is pure white.
TEST(ConfusionMatrix, TheHeatMapShowsTheDiagonalDarkAndEmptyCellsWhite) {
  const ConfusionMatrix m = three_classes();
  const data::Image image = m.image({"cat", "dog", "bird"});
  ASSERT_EQ(image.channels, 3);
  EXPECT_GT(image.width, 3 * 44);
  EXPECT_GT(image.height, 3 * 44);
  std::set<int> blues;
  int darkest = 255;
  for (std::int64_t y = 0; y < image.height; ++y) {
    for (std::int64_t x = 0; x < image.width; ++x) {
      blues.insert(pixel(image, 2, y, x));
      darkest = std::min<int>(darkest, pixel(image, 0, y, x));
    }
  }
  EXPECT_GE(blues.size(), 4u) << "shades: white, text, and the cells' blues";
  EXPECT_LT(darkest, 40);  // dog's row is all on its diagonal: the deepest blue (or the text)
}

// Issue 44: the columns were 44 pixels whatever the names, so Fashion-MNIST's read "T-shirt/" and "Ankle
// boo".
TEST(ConfusionMatrix, EveryColumnIsAsWideAsTheLongestClassName) {
  const std::vector<std::string> names = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                          "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};
  ConfusionMatrix m(10);
  for (int c = 0; c < 10; ++c) m.add(c, c, 3);
  const data::Image image = m.image(names);
  // The row labels, then ten columns each holding "T-shirt/top" whole.
  EXPECT_GE(image.width, text_width("T-shirt/top") + 10 * (text_width("T-shirt/top") + 2));
}

data::Dataset tiny_dataset(int n) {
  data::Dataset d;
  d.channels = 1;
  d.height = 8;
  d.width = 8;
  d.class_names = {"zero", "one"};
  for (int i = 0; i < n; ++i) {
    d.labels.push_back(i % 2);
    for (int p = 0; p < 64; ++p) d.images.push_back(static_cast<std::uint8_t>(i * 20 + p));
  }
  return d;
}

TEST(CaptionedGrid, ChosenSamplesWithThreeLineCaptionsGetTallerCells) {
  const data::Dataset d = tiny_dataset(6);
  // 8x8 scaled x8 to 64 pixels; "zero" and "one" fit at twice the font's size: 4 + 64 + 24 + 4 pixels.
  const data::Image plain = make_sample_grid(d, 1, 3);
  EXPECT_EQ(plain.height, 96);
  // "true: one" does not fit 2x: three lines at 1x, 4 + 64 + 3 x 12 + 4.
  const data::Image captioned =
      make_captioned_grid(d, {5, 1, 3}, {"true: one\npred: zero\np 0.61", "true: one\npred: zero", "x"}, 3);
  EXPECT_EQ(captioned.width, plain.width);
  EXPECT_EQ(captioned.height, 108);
  // The first cell shows sample 5 (scaled x8 to 64 pixels): its top-left pixel is sample 5's first pixel.
  EXPECT_EQ(pixel(captioned, 0, 4, 4), 5 * 20);
}

TEST(CaptionedGrid, ALongCaptionWidensTheCellsInsteadOfBeingCut) {
  const data::Dataset d = tiny_dataset(6);
  const std::string longest = "pred: T-shirt/top";
  const data::Image image = make_captioned_grid(d, {0, 1, 2}, {"true: Ankle boot\n" + longest, "x", "y"}, 3);
  EXPECT_GE(image.width, 3 * text_width(longest));
}

TEST(CaptionedGrid, RefusesAnIndexOutsideTheDatasetAndMismatchedCaptions) {
  const data::Dataset d = tiny_dataset(4);
  EXPECT_NE(testing::error_of([&] {
              make_captioned_grid(d, {4}, {"a"}, 2);
            }).find("sample 4 is outside the dataset's 4"),
            std::string::npos);
  EXPECT_NE(testing::error_of([&] {
              make_captioned_grid(d, {0, 1}, {"a"}, 2);
            }).find("1 captions for 2 samples"),
            std::string::npos);
}

// A batch as the loader gives it, normalized per channel, in NCHW and in NHWC: the same pixels come back,
// exactly, only the first `max_images`, values outside 0..255 clamped.
TEST(BatchAsDataset, UndoesTheNormalizationInEitherLayout) {
  const std::vector<float> mean{0.25f, 0.5f}, std{0.5f, 0.125f};
  const std::int64_t n = 3, c = 2, h = 2, w = 3;
  std::vector<std::uint8_t> pixels;
  Tensor nchw = Tensor::empty({n, c, h, w}, DType::F32);
  Tensor nhwc = Tensor::empty({n, c, h, w}, DType::F32, Device::cpu(), nullptr, Layout::NHWC);
  for (std::int64_t i = 0; i < n * c * h * w; ++i) {
    const std::int64_t image = i / (c * h * w), ch = (i / (h * w)) % c, p = i % (h * w);
    pixels.push_back(static_cast<std::uint8_t>((i * 37) % 256));
    const float v = (static_cast<float>(pixels.back()) / 255.0f - mean[ch]) / std[ch];
    nchw.data<float>()[i] = v;
    nhwc.data<float>()[(image * h * w + p) * c + ch] = v;
  }
  nchw.data<float>()[1] = 100.0f;  // far above 255 once the normalization is undone
  nhwc.data<float>()[2] = 100.0f;  // the same element: image 0, channel 0, pixel 1
  pixels[1] = 255;
  const Tensor labels = Tensor::from_vector(std::vector<std::int32_t>{1, 0, 1}, {3});
  for (const Tensor& images : {nchw, nhwc}) {
    const data::Dataset d = batch_as_dataset(images, labels, mean, std, {"a", "b"}, 2);
    ASSERT_EQ(d.size(), 2);
    EXPECT_EQ(d.channels, c);
    EXPECT_EQ(d.height, h);
    EXPECT_EQ(d.width, w);
    EXPECT_EQ(d.labels, (std::vector<std::int32_t>{1, 0}));
    EXPECT_EQ(d.images, std::vector<std::uint8_t>(pixels.begin(), pixels.begin() + 2 * c * h * w));
  }
  EXPECT_NE(testing::error_of([&] {
              batch_as_dataset(labels, labels, {}, {}, {"a", "b"});
            }).find("images must be float32 [B, C, H, W]"),
            std::string::npos);
  EXPECT_NE(testing::error_of([&] {
              batch_as_dataset(nchw, labels, {0.5f}, {0.5f}, {"a", "b"});
            }).find("1 means and 1 deviations for 2 channels"),
            std::string::npos);
}

}  // namespace
}  // namespace engine::apps
