// idx reader (MNIST, Fashion-MNIST) on tiny files the tests write: exact pixels and labels from raw and
// gzipped pairs, the 4 standard names, and an engine::Error naming the file for every malformed input.

#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "data/gzip.h"
#include "data/idx.h"
#include "tests/cpu/data_test_util.h"

namespace engine::data {
namespace {

using testing::TempDir;
using testing::write_bytes;

void put_be32(std::vector<std::uint8_t>& out, std::uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<std::uint8_t>(v >> shift));
}

std::uint8_t pixel(int i, int y, int x) { return static_cast<std::uint8_t>(i * 31 + y * 5 + x); }

std::vector<std::uint8_t> make_images(int n, int rows, int cols, std::uint32_t magic = 2051) {
  std::vector<std::uint8_t> out;
  put_be32(out, magic);
  put_be32(out, static_cast<std::uint32_t>(n));
  put_be32(out, static_cast<std::uint32_t>(rows));
  put_be32(out, static_cast<std::uint32_t>(cols));
  for (int i = 0; i < n; ++i)
    for (int y = 0; y < rows; ++y)
      for (int x = 0; x < cols; ++x) out.push_back(pixel(i, y, x));
  return out;
}

std::vector<std::uint8_t> make_labels(const std::vector<std::uint8_t>& labels) {
  std::vector<std::uint8_t> out;
  put_be32(out, 2049);
  put_be32(out, static_cast<std::uint32_t>(labels.size()));
  out.insert(out.end(), labels.begin(), labels.end());
  return out;
}

void expect_tiny(const Dataset& d) {
  ASSERT_EQ(d.size(), 3);
  EXPECT_EQ(d.channels, 1);
  EXPECT_EQ(d.height, 4);
  EXPECT_EQ(d.width, 5);
  EXPECT_EQ(d.labels, (std::vector<std::int32_t>{7, 0, 9}));
  for (int i = 0; i < 3; ++i)
    for (int y = 0; y < 4; ++y)
      for (int x = 0; x < 5; ++x)
        ASSERT_EQ(d.image(i)[y * 5 + x], pixel(i, y, x)) << i << " " << y << " " << x;
}

TEST(IdxReader, DecodesBytesExactly) {
  const Dataset d =
      decode_idx(make_images(3, 4, 5), "img", make_labels({7, 0, 9}), "lab", mnist_class_names());
  expect_tiny(d);
  EXPECT_EQ(d.class_names[7], "7");
}

TEST(IdxReader, LoadsRawGzippedAndUnnamedGzipFiles) {
  TempDir tmp;
  write_bytes(tmp / "raw-images", make_images(3, 4, 5));
  write_bytes(tmp / "raw-labels", make_labels({7, 0, 9}));
  write_bytes(tmp / "gz-images.gz", gzip_compress(make_images(3, 4, 5)));
  write_bytes(tmp / "gz-labels.gz", gzip_compress(make_labels({7, 0, 9})));
  write_bytes(tmp / "images-no-suffix", gzip_compress(make_images(3, 4, 5)));  // gzip found by its magic
  expect_tiny(load_idx(tmp / "raw-images", tmp / "raw-labels", mnist_class_names()));
  expect_tiny(load_idx(tmp / "gz-images.gz", tmp / "gz-labels.gz", mnist_class_names()));
  expect_tiny(load_idx(tmp / "images-no-suffix", tmp / "raw-labels", mnist_class_names()));
}

TEST(IdxReader, FindsTheFourStandardNames) {
  TempDir tmp;
  write_bytes(tmp / "train-images-idx3-ubyte.gz", gzip_compress(make_images(3, 4, 5)));
  write_bytes(tmp / "train-labels-idx1-ubyte", make_labels({7, 0, 9}));
  write_bytes(tmp / "t10k-images-idx3-ubyte", make_images(1, 4, 5));
  write_bytes(tmp / "t10k-labels-idx1-ubyte.gz", gzip_compress(make_labels({4})));
  expect_tiny(load_mnist(tmp.str(), Split::Train));
  const Dataset test = load_fashion_mnist(tmp.str(), Split::Test);
  ASSERT_EQ(test.size(), 1);
  EXPECT_EQ(test.labels[0], 4);
  EXPECT_EQ(test.class_names[4], "Coat");
  EXPECT_EQ(test.class_names[0], "T-shirt/top");
  EXPECT_EQ(test.class_names[9], "Ankle boot");
}

TEST(IdxReader, RejectsAWrongMagicNumber) {
  auto images = make_images(3, 4, 5);
  images[2] = 0x09;  // another element type
  EXPECT_DATA_ERROR(decode_idx(images, "bad-images", make_labels({7, 0, 9}), "lab", mnist_class_names()),
                    "bad-images", "wrong idx magic number", "expected 2051");
  EXPECT_DATA_ERROR(
      decode_idx(make_images(3, 4, 5), "img", std::vector<std::uint8_t>{'P', 'K', 3, 4, 0, 0, 0, 0},
                 "zip-labels", mnist_class_names()),
      "zip-labels", "wrong idx magic number", "expected 2049");
}

TEST(IdxReader, RejectsAWrongDimensionCount) {
  TempDir tmp;
  // The labels file given as the images file: magic 2049, one dimension.
  write_bytes(tmp / "labels-as-images", make_labels({7, 0, 9}));
  write_bytes(tmp / "labels", make_labels({7, 0, 9}));
  EXPECT_DATA_ERROR(load_idx(tmp / "labels-as-images", tmp / "labels", mnist_class_names()),
                    "labels-as-images", "wrong idx dimension count 1", "expected 3");
}

TEST(IdxReader, RejectsDimensionsThatDisagreeWithTheSize) {
  TempDir tmp;
  auto images = make_images(3, 4, 5);
  images.pop_back();
  write_bytes(tmp / "short-images", images);
  write_bytes(tmp / "labels", make_labels({7, 0, 9}));
  EXPECT_DATA_ERROR(load_idx(tmp / "short-images", tmp / "labels", mnist_class_names()), "short-images",
                    "3 x 4 x 5 need 60 data bytes", "has 59");
  auto huge = make_images(0, 0, 0);
  huge[4] = huge[8] = huge[12] = 0xff;  // 2^32-1 cubed: no overflow, a clean error
  EXPECT_DATA_ERROR(decode_idx(huge, "huge", make_labels({}), "lab", mnist_class_names()), "huge",
                    "more than 2^62");
  EXPECT_DATA_ERROR(decode_idx(std::vector<std::uint8_t>{0, 0, 8, 3, 0}, "tiny", make_labels({}), "lab",
                               mnist_class_names()),
                    "tiny", "too short");
}

TEST(IdxReader, RejectsDifferentImageAndLabelCounts) {
  TempDir tmp;
  write_bytes(tmp / "images", make_images(3, 4, 5));
  write_bytes(tmp / "labels", make_labels({7, 0}));
  EXPECT_DATA_ERROR(load_idx(tmp / "images", tmp / "labels", mnist_class_names()), "images holds 3 images",
                    "labels holds 2 labels");
}

TEST(IdxReader, RejectsALabelOutOfRange) {
  EXPECT_DATA_ERROR(
      decode_idx(make_images(3, 4, 5), "img", make_labels({7, 10, 9}), "the-labels", mnist_class_names()),
      "the-labels", "label 1 is 10", "outside 0..9");
}

TEST(IdxReader, RejectsTruncatedAndNonGzipFiles) {
  TempDir tmp;
  write_bytes(tmp / "labels", make_labels({7, 0, 9}));
  auto gz = gzip_compress(make_images(3, 4, 5));
  gz.resize(gz.size() - 9);  // cut inside the trailer
  write_bytes(tmp / "cut-images.gz", gz);
  EXPECT_DATA_ERROR(load_idx(tmp / "cut-images.gz", tmp / "labels", mnist_class_names()), "cut-images.gz",
                    "truncated gzip");
  write_bytes(tmp / "plain-images.gz", make_images(3, 4, 5));
  EXPECT_DATA_ERROR(load_idx(tmp / "plain-images.gz", tmp / "labels", mnist_class_names()), "plain-images.gz",
                    "not gzip");
  auto corrupt = gzip_compress(make_images(3, 4, 5));
  corrupt[corrupt.size() - 6] ^= 0xff;  // the CRC
  write_bytes(tmp / "crc-images.gz", corrupt);
  EXPECT_DATA_ERROR(load_idx(tmp / "crc-images.gz", tmp / "labels", mnist_class_names()), "crc-images.gz",
                    "corrupt gzip");
}

TEST(IdxReader, RejectsMissingFilesAndDirectories) {
  TempDir tmp;
  write_bytes(tmp / "train-labels-idx1-ubyte", make_labels({7, 0, 9}));
  EXPECT_DATA_ERROR(load_mnist(tmp.str(), Split::Train), "no train-images-idx3-ubyte", tmp.str());
  std::filesystem::create_directory(tmp / "train-images-idx3-ubyte");
  EXPECT_DATA_ERROR(load_mnist(tmp.str(), Split::Train), "train-images-idx3-ubyte", "is a directory");
  EXPECT_DATA_ERROR(load_mnist(tmp / "absent", Split::Test), "absent", "is not a folder");
  EXPECT_DATA_ERROR(load_idx(tmp / "absent-images", tmp / "train-labels-idx1-ubyte", mnist_class_names()),
                    "absent-images", "no such file");
}

}  // namespace
}  // namespace engine::data
