#pragma once
// Image trees the folder-dataset tests write: root/<class>/<k>.jpg|png, pictures whose colour says the class
// (with texture, so crops differ), sides from 64x64 to 500x375, JPEG and PNG alternating.

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "data/image_codec.h"

namespace engine::testing {

inline data::Image class_picture(int height, int width, int label, int seed) {
  data::Image im{3, height, width, std::vector<std::uint8_t>(static_cast<std::size_t>(3 * height * width))};
  for (int c = 0; c < 3; ++c) {
    for (int y = 0; y < height; ++y) {
      for (int x = 0; x < width; ++x) {
        const int v = (c == label % 3 ? 150 : 40) + (x * 3 + y * 5 + seed * 11 + c * 17) % 90;
        im.pixels[static_cast<std::size_t>((c * height + y) * width + x)] = static_cast<std::uint8_t>(v);
      }
    }
  }
  return im;
}

inline void write_file(const std::string& path, const std::vector<std::uint8_t>& bytes) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) throw std::runtime_error("cannot write " + path);
  const bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  if (std::fclose(f) != 0 || !ok) throw std::runtime_error("cannot write " + path);
}

inline void make_image_tree(const std::string& root, const std::vector<std::string>& classes, int per_class) {
  const int sizes[][2] = {{64, 64}, {375, 500}, {100, 80}, {500, 375}, {97, 131}};
  for (std::size_t c = 0; c < classes.size(); ++c) {
    for (int k = 0; k < per_class; ++k) {
      const auto* s = sizes[(k + static_cast<int>(c)) % 5];
      const data::Image im = class_picture(s[0], s[1], static_cast<int>(c), k);
      const bool jpeg = k % 2 == 0;
      write_file(fmt::format("{}/{}/{}.{}", root, classes[c], k, jpeg ? "jpg" : "png"),
                 jpeg ? data::encode_jpeg(im, 90) : data::encode_png(im));
    }
  }
}

}  // namespace engine::testing
