#include "benchmarks/common/random_dataset.h"

#include <string>

namespace engine::bench {

engine::data::Dataset random_dataset(std::int64_t n, int channels, int height, int width) {
  engine::data::Dataset d;
  d.channels = channels;
  d.height = height;
  d.width = width;
  for (int k = 0; k < 10; ++k) d.class_names.push_back("class" + std::to_string(k));
  d.images.resize(static_cast<std::size_t>(n * d.image_bytes()));
  std::uint64_t s = 0x9e3779b97f4a7c15ull;  // splitmix64
  for (std::size_t i = 0; i < d.images.size(); i += 8) {
    std::uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    for (std::size_t b = 0; b < 8 && i + b < d.images.size(); ++b)
      d.images[i + b] = static_cast<std::uint8_t>(z >> (8 * b));
  }
  for (std::int64_t i = 0; i < n; ++i) d.labels.push_back(static_cast<std::int32_t>(i % 10));
  return d;
}

}  // namespace engine::bench
