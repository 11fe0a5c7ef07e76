#include "data/image_folder.h"

#include "core/error.h"
#include "data/file_list.h"
#include "data/image_codec.h"

namespace engine::data {

Dataset load_image_folder(const std::string& root, int channels, std::int64_t height, std::int64_t width,
                          const std::vector<std::string>* classes) {
  const FileList list = list_images(root, classes);
  Dataset d;
  d.channels = channels;
  d.height = height;
  d.width = width;
  d.class_names = list.class_names;
  for (std::size_t i = 0; i < list.files.size(); ++i) {
    const std::string& file = list.files[i];
    const Image image = decode_image_file(file, channels, height, width);
    if (d.height == 0) {  // no size requested: the first image sets it
      d.height = image.height;
      d.width = image.width;
    }
    ENGINE_CHECK(image.height == d.height && image.width == d.width,
                 "{}: image is {}x{} (HxW), expected {}x{} like the first image; pass a size to resize", file,
                 image.height, image.width, d.height, d.width);
    d.images.insert(d.images.end(), image.pixels.begin(), image.pixels.end());
    d.labels.push_back(list.labels[i]);
  }
  validate(d, root);
  return d;
}

}  // namespace engine::data
