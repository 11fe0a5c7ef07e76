#pragma once
// A labelled image dataset held in memory as uint8 pixels, the common result of every reader.
//
// images: N x C x H x W, row-major, one byte per channel value (CIFAR-10: 3 x 32 x 32; MNIST: 1 x 28 x 28).
// labels: N class indices in [0, class_names.size()).

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace engine::data {

struct Dataset {
  std::int64_t channels = 0;
  std::int64_t height = 0;
  std::int64_t width = 0;
  std::vector<std::uint8_t> images;  // size() == size() * image_bytes()
  std::vector<std::int32_t> labels;
  std::vector<std::string> class_names;

  std::int64_t size() const { return static_cast<std::int64_t>(labels.size()); }
  std::int64_t image_bytes() const { return channels * height * width; }
  const std::uint8_t* image(std::int64_t i) const { return images.data() + i * image_bytes(); }
  std::int64_t num_classes() const { return static_cast<std::int64_t>(class_names.size()); }
};

// Throws engine::Error naming `source` when the parts disagree: pixel bytes vs count x image size, a label
// outside [0, num_classes), a non-positive image dimension. Every reader ends with it, so a partial or
// inconsistent dataset never reaches training.
void validate(const Dataset& dataset, const std::string& source);

}  // namespace engine::data
