#include "benchmarks/common/photo_folder.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "core/error.h"
#include "data/image_codec.h"

namespace engine::bench {

void make_photo_folder(const std::string& root, std::int64_t count) {
  namespace fs = std::filesystem;
  const fs::path stamp = fs::path(root) / fmt::format(".made-{}", count);
  if (fs::exists(stamp)) return;
  std::uint64_t state = 0x9e3779b97f4a7c15ull;
  auto next = [&state] {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  };
  for (std::int64_t i = 0; i < count; ++i) {
    const int h = 256 + static_cast<int>(next() % 245), w = 256 + static_cast<int>(next() % 245);
    data::Image im{3, h, w, std::vector<std::uint8_t>(static_cast<std::size_t>(3 * h * w))};
    const double fx = 0.5 + static_cast<double>(next() % 100) / 25.0,
                 fy = 0.5 + static_cast<double>(next() % 100) / 25.0;
    for (int c = 0; c < 3; ++c) {
      for (int y = 0; y < h; ++y) {
        for (int x = 0; x < w; ++x) {
          const double v = 128 + 60 * std::sin(fx * x / w * 6.28 + c) * std::cos(fy * y / h * 6.28) +
                           static_cast<double>(next() % 24) + 20 * std::sin((x + y) * 0.3);
          im.pixels[static_cast<std::size_t>((c * h + y) * w + x)] =
              static_cast<std::uint8_t>(std::clamp(v, 0.0, 255.0));
        }
      }
    }
    const fs::path dir = fs::path(root) / fmt::format("c{}", i % 10);
    fs::create_directories(dir);
    const std::vector<std::uint8_t> bytes = data::encode_jpeg(im, 90);
    std::ofstream f(dir / fmt::format("{}.jpg", i), std::ios::binary);
    f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    ENGINE_CHECK(f.good(), "{}: cannot write the benchmark's images", dir.string());
  }
  std::ofstream(stamp) << count << "\n";
}

}  // namespace engine::bench
