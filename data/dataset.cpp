#include "data/dataset.h"

#include <cstring>

#include "core/error.h"

namespace engine::data {

std::int32_t read_sample(const Dataset& d, std::int64_t i, std::uint64_t epoch, std::uint8_t* dst) {
  if (d.source != nullptr) return d.source->read(i, epoch, dst);
  std::memcpy(dst, d.image(i), static_cast<std::size_t>(d.image_bytes()));
  return d.labels[static_cast<std::size_t>(i)];
}

void validate(const Dataset& d, const std::string& source) {
  ENGINE_CHECK(d.channels > 0 && d.height > 0 && d.width > 0, "{}: image size {}x{}x{} is not positive",
               source, d.channels, d.height, d.width);
  ENGINE_CHECK(d.num_classes() > 0, "{}: no class names", source);
  const auto expected = d.on_disk() ? std::size_t{0} : static_cast<std::size_t>(d.size() * d.image_bytes());
  ENGINE_CHECK(d.images.size() == expected, "{}: {} pixel bytes for {} images of {} bytes (expected {})",
               source, d.images.size(), d.size(), d.image_bytes(), expected);
  for (std::int64_t i = 0; i < d.size(); ++i) {
    const std::int32_t label = d.labels[static_cast<std::size_t>(i)];
    ENGINE_CHECK(label >= 0 && label < d.num_classes(), "{}: sample {} has label {}, outside 0..{}", source,
                 i, label, d.num_classes() - 1);
  }
}

}  // namespace engine::data
