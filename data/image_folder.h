#pragma once
// A dataset laid out as one folder per class: root/<class name>/<image>.png|jpg|jpeg|bmp (extensions in any
// case). Classes are the sub-folders sorted by name (label = index); each class's files are sorted by name.
// Other files and hidden entries (names starting with '.') are ignored. The whole folder decoded into memory
// at one size (cnn_data's report); training reads folders from disk instead (data/disk_images.h).

#include <cstdint>
#include <string>
#include <vector>

#include "data/dataset.h"

namespace engine::data {

// Decodes every image to `channels` (1, 3 or 4) and, when height and width are > 0, resizes it to that size.
// With height = width = 0 every image must have the size of the first one. Throws engine::Error naming the
// file for a missing or non-folder root, no class folders, a class folder without images, an image that is
// empty, truncated, not an image, or of the wrong size. Never returns a partial dataset.
// `root` may also be a CSV file list, and `classes` match its classes to a training split's by name
// (data/file_list.h).
Dataset load_image_folder(const std::string& root, int channels, std::int64_t height = 0,
                          std::int64_t width = 0, const std::vector<std::string>* classes = nullptr);

}  // namespace engine::data
