#pragma once
// A folder of synthetic JPEG "photos" for the loader benchmarks (loader_bench --folder): ImageFolder layout
// root/c<k>/<i>.jpg, 10 classes, sides 256 to 500 pixels (ImageNet's usual range), smooth gradients with
// texture and noise so that JPEG compresses them about as it does photos (quality 90). Made once: an existing
// root with the same count is reused.

#include <cstdint>
#include <string>

namespace engine::bench {

void make_photo_folder(const std::string& root, std::int64_t count);

}  // namespace engine::bench
