#pragma once
// A dataset laid out as one folder per class: root/<class name>/<image>.png|jpg|jpeg|bmp (extensions in any
// case). Classes are the sub-folders sorted by name (label = index); each class's files are sorted by name.
// Other files and hidden entries (names starting with '.') are ignored.

#include <cstdint>
#include <string>

#include "data/dataset.h"

namespace engine::data {

// Decodes every image to `channels` (1, 3 or 4) and, when height and width are > 0, resizes it to that size.
// With height = width = 0 every image must have the size of the first one. Throws engine::Error naming the
// file for a missing or non-folder root, no class folders, a class folder without images, an image that is
// empty, truncated, not an image, or of the wrong size. Never returns a partial dataset.
Dataset load_image_folder(const std::string& root, int channels, std::int64_t height = 0,
                          std::int64_t width = 0);

}  // namespace engine::data
