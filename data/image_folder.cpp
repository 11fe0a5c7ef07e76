#include "data/image_folder.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <vector>

#include "core/error.h"
#include "data/image_codec.h"

namespace engine::data {
namespace {

namespace fs = std::filesystem;

bool is_image_name(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext == ".png" || ext == ".jpg" || ext == ".jpeg" || ext == ".bmp";
}

bool is_hidden(const fs::path& p) { return p.filename().string().starts_with("."); }

// Sorted entries of `dir` that pass `keep`.
template <typename Keep>
std::vector<fs::path> sorted_entries(const fs::path& dir, Keep keep) {
  std::vector<fs::path> out;
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  ENGINE_CHECK(!ec, "{}: cannot list folder: {}", dir.string(), ec.message());
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    ENGINE_CHECK(!ec, "{}: cannot list folder: {}", dir.string(), ec.message());
    if (!is_hidden(it->path()) && keep(*it)) out.push_back(it->path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

Dataset load_image_folder(const std::string& root, int channels, std::int64_t height, std::int64_t width) {
  std::error_code ec;
  ENGINE_CHECK(fs::exists(root, ec), "{}: no such folder", root);
  ENGINE_CHECK(fs::is_directory(root, ec), "{}: is not a folder (expected one sub-folder per class)", root);
  const auto class_dirs = sorted_entries(root, [](const fs::directory_entry& e) {
    std::error_code e2;
    return e.is_directory(e2);
  });
  ENGINE_CHECK(!class_dirs.empty(), "{}: no class sub-folders (expected {}/<class>/<image>.png)", root, root);

  Dataset d;
  d.channels = channels;
  d.height = height;
  d.width = width;
  for (std::size_t label = 0; label < class_dirs.size(); ++label) {
    const auto& dir = class_dirs[label];
    d.class_names.push_back(dir.filename().string());
    const auto files =
        sorted_entries(dir, [](const fs::directory_entry& e) { return is_image_name(e.path()); });
    ENGINE_CHECK(!files.empty(), "{}: class folder holds no .png, .jpg, .jpeg or .bmp files", dir.string());
    for (const auto& file : files) {
      const Image image = decode_image_file(file.string(), channels, height, width);
      if (d.height == 0) {  // no size requested: the first image sets it
        d.height = image.height;
        d.width = image.width;
      }
      ENGINE_CHECK(image.height == d.height && image.width == d.width,
                   "{}: image is {}x{} (HxW), expected {}x{} like the first image; pass a size to resize",
                   file.string(), image.height, image.width, d.height, d.width);
      d.images.insert(d.images.end(), image.pixels.begin(), image.pixels.end());
      d.labels.push_back(static_cast<std::int32_t>(label));
    }
  }
  validate(d, root);
  return d;
}

}  // namespace engine::data
