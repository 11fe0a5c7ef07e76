// Image decoding (PNG and BMP through stb, JPEG through libjpeg-turbo) and the class-per-folder reader, on
// tiny images the tests encode themselves: exact pixels, channel conversion, bilinear resizing, and an
// engine::Error naming the file for every malformed input.

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "data/image_codec.h"
#include "data/image_folder.h"
#include "tests/common/environment.h"
#include "tests/cpu/data_test_util.h"

namespace engine::data {
namespace {

using testing::TempDir;
using testing::write_bytes;
using testing::write_text;

// A 3-channel image whose value at (c, y, x) is `base + 40c + 10y + x`.
Image make_rgb(int height, int width, int base) {
  Image im{3, height, width, {}};
  for (int c = 0; c < 3; ++c)
    for (int y = 0; y < height; ++y)
      for (int x = 0; x < width; ++x)
        im.pixels.push_back(static_cast<std::uint8_t>(base + 40 * c + 10 * y + x));
  return im;
}

TEST(ImageCodec, PngAndBmpRoundTripExactly) {
  const Image src = make_rgb(2, 3, 5);
  for (const auto& bytes : {encode_png(src), encode_bmp(src)}) {
    const Image back = decode_image(bytes, "mem", 3);
    EXPECT_EQ(back.channels, 3);
    EXPECT_EQ(back.height, 2);
    EXPECT_EQ(back.width, 3);
    EXPECT_EQ(back.pixels, src.pixels);
  }
}

TEST(ImageCodec, ConvertsChannels) {
  const Image src = make_rgb(2, 3, 5);
  const Image grey = decode_image(encode_png(src), "mem", 1);
  ASSERT_EQ(grey.pixels.size(), 6u);
  // stb's luminance: (77 r + 150 g + 29 b) >> 8, at (y=1, x=2): r=17, g=57, b=97.
  EXPECT_EQ(grey.pixels[5], (77 * 17 + 150 * 57 + 29 * 97) >> 8);
  const Image rgba = decode_image(encode_png(src), "mem", 4);
  ASSERT_EQ(rgba.pixels.size(), 24u);
  EXPECT_EQ(rgba.pixels[18], 255);  // opaque alpha plane
  Image grey_src{1, 1, 2, {30, 200}};
  const Image rgb = decode_image(encode_png(grey_src), "mem", 3);
  EXPECT_EQ(rgb.pixels, (std::vector<std::uint8_t>{30, 200, 30, 200, 30, 200}));
}

TEST(ImageCodec, ResizesBilinearly) {
  // 1 x 2 -> 1 x 4: output centres at -0.25, 0.25, 0.75, 1.25 source pixels (edges clamped).
  const Image src{1, 1, 2, {0, 200}};
  const Image up = decode_image(encode_png(src), "mem", 1, 1, 4);
  ASSERT_EQ(up.pixels.size(), 4u);
  EXPECT_EQ(up.pixels[0], 0);
  EXPECT_NEAR(up.pixels[1], 50, 1);
  EXPECT_NEAR(up.pixels[2], 150, 1);
  EXPECT_EQ(up.pixels[3], 200);
  // A uniform image stays uniform at any size.
  Image flat{3, 5, 7, std::vector<std::uint8_t>(105, 123)};
  const Image down = decode_image(encode_png(flat), "mem", 3, 2, 3);
  EXPECT_EQ(down.pixels, std::vector<std::uint8_t>(18, 123));
}

TEST(ImageCodec, DecodesJpegApproximately) {
  Image flat{3, 8, 8, {}};
  for (int c = 0; c < 3; ++c)
    flat.pixels.insert(flat.pixels.end(), 64, static_cast<std::uint8_t>(60 + 70 * c));
  const Image back = decode_image(encode_jpeg(flat, 95), "mem.jpg", 3);
  ASSERT_EQ(back.pixels.size(), flat.pixels.size());
  for (std::size_t i = 0; i < back.pixels.size(); ++i) EXPECT_NEAR(back.pixels[i], flat.pixels[i], 3) << i;
}

TEST(ImageCodec, RejectsEmptyNonImageAndTruncatedFiles) {
  TempDir tmp;
  write_bytes(tmp / "empty.png", {});
  EXPECT_DATA_ERROR(decode_image_file(tmp / "empty.png", 3), "empty.png", "empty image file");
  write_text(tmp / "notes.png", "this is text, not a picture");
  EXPECT_DATA_ERROR(decode_image_file(tmp / "notes.png", 3), "notes.png", "not an image", "74 68 69 73");
  const Image src = make_rgb(16, 16, 0);
  const std::vector<std::pair<std::string, std::vector<std::uint8_t>>> files = {
      {"cut.png", encode_png(src)}, {"cut.jpg", encode_jpeg(src)}, {"cut.bmp", encode_bmp(src)}};
  for (const auto& file : files) {
    const std::string& name =
        file.first;  // not a structured binding: clang 14 (clang-tidy) cannot capture one
    const std::vector<std::uint8_t>& bytes = file.second;
    for (const std::size_t keep : {bytes.size() - 1, bytes.size() / 2, std::size_t{20}}) {
      write_bytes(tmp / name,
                  std::vector<std::uint8_t>(bytes.begin(), bytes.begin() + static_cast<long>(keep)));
      SCOPED_TRACE(name + " cut to " + std::to_string(keep) + " bytes");
      EXPECT_DATA_ERROR(decode_image_file(tmp / name, 3), name);
    }
  }
  EXPECT_DATA_ERROR(decode_image_file(tmp / "absent.png", 3), "absent.png", "no such file");
  EXPECT_DATA_ERROR(decode_image_file(tmp.str(), 3), tmp.str(), "is a directory");
}

// A JPEG Huffman table declaring more than 256 codes overflowed an array inside stb_image 2.27 (found by
// tests/fuzz/fuzz_image); libjpeg-turbo, which decodes JPEG now, refuses it as a bogus table.
TEST(ImageCodec, RejectsAJpegHuffmanTableWithTooManyCodes) {
  auto jpeg = encode_jpeg(make_rgb(8, 8, 0));
  std::size_t dht = 0;
  for (std::size_t i = 2; i + 1 < jpeg.size(); ++i) {
    if (jpeg[i] == 0xff && jpeg[i + 1] == 0xc4) {
      dht = i;
      break;
    }
  }
  ASSERT_NE(dht, 0u) << "no DHT segment in stb's JPEG";
  jpeg[dht + 5 + 15] = 250;  // the count of 16-bit codes: now more than 256 in all
  EXPECT_DATA_ERROR(decode_image(jpeg, "evil.jpg", 3), "evil.jpg", "Bogus Huffman table");
}

// A BMP header declaring a width of 0 passes stb's header check; resizing it divided by zero (UBSan, found
// by fuzz_image): refused by name at the header.
TEST(ImageCodec, RejectsABmpOfWidthZero) {
  auto bmp = encode_bmp(make_rgb(4, 4, 0));
  for (int i = 18; i < 22; ++i) bmp[static_cast<std::size_t>(i)] = 0;  // BITMAPINFOHEADER's width
  EXPECT_DATA_ERROR(decode_image(bmp, "flat.bmp", 1, 7, 5), "flat.bmp", "0x4 pixels");
}

// The inputs on which stb_image 2.27's JPEG Huffman decoder read out of bounds (a scan whose data ends early:
// nothings/stb#1293, found by tests/fuzz/fuzz_image, kept in tests/fuzz/known_crashes/): refused by name,
// through both the in-memory decoder and the file reader, at the file's size and resized.
TEST(ImageCodec, RefusesTheJpegsThatCrashedStb) {
  const std::filesystem::path dir = engine::testing::repo_root() / "tests/fuzz/known_crashes";
  int seen = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string path = entry.path().string();
    SCOPED_TRACE(path);
    EXPECT_DATA_ERROR(decode_image_file(path, 3), path);
    EXPECT_DATA_ERROR(decode_image_file(path, 1, 7, 5), path);
    ++seen;
  }
  EXPECT_GE(seen, 2) << "the known crashes are missing from " << dir;
}

// root/cat: 2 PNGs, root/dog: 1 BMP and a text file that is ignored.
void write_two_classes(const std::string& root) {
  write_bytes(root + "/cat/b.png", encode_png(make_rgb(2, 3, 1)));
  write_bytes(root + "/cat/a.PNG", encode_png(make_rgb(2, 3, 2)));
  write_bytes(root + "/dog/z.bmp", encode_bmp(make_rgb(2, 3, 3)));
  write_text(root + "/dog/readme.txt", "not an image, ignored");
  write_text(root + "/.hidden/x.png", "hidden folders are not classes");
}

TEST(ImageFolderReader, LoadsClassesAndFilesSorted) {
  TempDir tmp;
  write_two_classes(tmp.str());
  const Dataset d = load_image_folder(tmp.str(), 3);
  EXPECT_EQ(d.class_names, (std::vector<std::string>{"cat", "dog"}));
  ASSERT_EQ(d.size(), 3);
  EXPECT_EQ(d.labels, (std::vector<std::int32_t>{0, 0, 1}));
  EXPECT_EQ(d.height, 2);
  EXPECT_EQ(d.width, 3);
  // Sorted file names: cat/a.PNG (base 2), cat/b.png (base 1), dog/z.bmp (base 3).
  const int bases[3] = {2, 1, 3};
  for (int i = 0; i < 3; ++i) {
    const Image expected = make_rgb(2, 3, bases[i]);
    EXPECT_TRUE(std::equal(expected.pixels.begin(), expected.pixels.end(), d.image(i))) << "sample " << i;
  }
  const Dataset resized = load_image_folder(tmp.str(), 1, 8, 8);
  EXPECT_EQ(resized.channels, 1);
  EXPECT_EQ(resized.height, 8);
  EXPECT_EQ(resized.images.size(), 3u * 64u);
}

TEST(ImageFolderReader, RejectsBadFoldersAndImages) {
  TempDir tmp;
  EXPECT_DATA_ERROR(load_image_folder(tmp / "absent", 3), "absent", "no such folder");
  write_text(tmp / "file", "x");
  EXPECT_DATA_ERROR(load_image_folder(tmp / "file", 3), "file", "is not a folder");
  std::filesystem::create_directory(tmp / "empty");
  EXPECT_DATA_ERROR(load_image_folder(tmp / "empty", 3), "empty", "no class sub-folders");

  const std::string root = tmp / "data";
  write_two_classes(root);
  std::filesystem::create_directory(root + "/emu");
  EXPECT_DATA_ERROR(load_image_folder(root, 3), "emu", "holds no .png");
  std::filesystem::remove(root + "/emu");

  write_bytes(root + "/dog/big.png", encode_png(make_rgb(4, 3, 0)));  // other size, no resize asked
  EXPECT_DATA_ERROR(load_image_folder(root, 3), "big.png", "is 4x3", "expected 2x3");
  EXPECT_EQ(load_image_folder(root, 3, 2, 3).size(), 4);  // fine when resizing
  std::filesystem::remove(root + "/dog/big.png");

  write_bytes(root + "/dog/zero.jpg", {});
  EXPECT_DATA_ERROR(load_image_folder(root, 3), "zero.jpg", "empty");
  write_text(root + "/dog/zero.jpg", "GIF89a");
  EXPECT_DATA_ERROR(load_image_folder(root, 3), "zero.jpg", "not an image");
}

}  // namespace
}  // namespace engine::data
