#include "data/idx.h"

#include <cstdlib>
#include <filesystem>

#include "core/error.h"
#include "data/data_home.h"
#include "data/file_io.h"

namespace engine::data {
namespace {

namespace fs = std::filesystem;

constexpr std::uint32_t kImagesMagic = 2051;  // 0x00000803: unsigned bytes, 3 dimensions
constexpr std::uint32_t kLabelsMagic = 2049;  // 0x00000801: unsigned bytes, 1 dimension

std::uint32_t read_be32(const std::uint8_t* p) {
  return std::uint32_t{p[0]} << 24 | std::uint32_t{p[1]} << 16 | std::uint32_t{p[2]} << 8 |
         std::uint32_t{p[3]};
}

// Checks the header of an idx file of unsigned bytes with `ndims` dimensions, and that the dimensions match
// the size. Returns the dimensions.
std::vector<std::uint64_t> parse_header(std::span<const std::uint8_t> bytes, const std::string& source,
                                        std::uint32_t magic, int ndims) {
  ENGINE_CHECK(bytes.size() >= 4, "{}: {} bytes, too short for an idx header (expected magic {})", source,
               bytes.size(), magic);
  const std::uint32_t found = read_be32(bytes.data());
  const int found_dims = bytes[3];
  if (found != magic) {
    // Same type byte, other dimension count: say so, it is the likelier mistake (images vs labels swapped).
    ENGINE_CHECK(!(bytes[0] == 0 && bytes[1] == 0 && bytes[2] == 0x08),
                 "{}: wrong idx dimension count {} (magic {}), expected {} (magic {})", source, found_dims,
                 found, ndims, magic);
    ENGINE_FAIL("{}: wrong idx magic number {} (bytes {:02x} {:02x} {:02x} {:02x}), expected {}", source,
                found, bytes[0], bytes[1], bytes[2], bytes[3], magic);
  }
  const std::size_t header = 4 + 4 * static_cast<std::size_t>(ndims);
  ENGINE_CHECK(bytes.size() >= header,
               "{}: {} bytes, too short for an idx header of {} dimensions ({} bytes)", source, bytes.size(),
               ndims, header);
  std::vector<std::uint64_t> dims;
  std::uint64_t count = 1;  // at most 2^96 in principle; stop once past the file size
  bool overflow = false;
  for (int i = 0; i < ndims; ++i) {
    dims.push_back(read_be32(bytes.data() + 4 + 4 * i));
    if (dims.back() != 0 && count > (std::uint64_t{1} << 62) / dims.back()) overflow = true;
    count = overflow ? count : count * dims.back();
  }
  std::string shape = std::to_string(dims[0]);
  for (int i = 1; i < ndims; ++i) shape += " x " + std::to_string(dims[static_cast<std::size_t>(i)]);
  const std::uint64_t payload = bytes.size() - header;
  ENGINE_CHECK(!overflow && count == payload,
               "{}: idx dimensions {} need {} data bytes, but the file has {} after its {}-byte header",
               source, shape, overflow ? std::string("more than 2^62") : std::to_string(count), payload,
               header);
  return dims;
}

std::string find_file(const fs::path& dir, const std::string& name, const std::string& dataset) {
  std::error_code ec;
  if (fs::exists(dir / name, ec)) return (dir / name).string();
  if (fs::exists(dir / (name + ".gz"), ec)) return (dir / (name + ".gz")).string();
  ENGINE_FAIL("{}: no {} or {}.gz in {}", dataset, name, name, dir.string());
}

Dataset load_pair(const std::string& root, Split split, const std::vector<std::string>& class_names,
                  const std::string& dataset) {
  std::error_code ec;
  ENGINE_CHECK(fs::is_directory(root, ec), "{}: {} is not a folder (expected the 4 idx files in it)", dataset,
               root);
  const std::string prefix = split == Split::Train ? "train" : "t10k";
  const fs::path dir(root);
  const std::string images = find_file(dir, prefix + "-images-idx3-ubyte", dataset);
  const std::string labels = find_file(dir, prefix + "-labels-idx1-ubyte", dataset);
  return load_idx(images, labels, class_names);
}

}  // namespace

const std::vector<std::string>& mnist_class_names() {
  static const std::vector<std::string> names = {"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"};
  return names;
}

const std::vector<std::string>& fashion_mnist_class_names() {
  static const std::vector<std::string> names = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                                 "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};
  return names;
}

std::string default_mnist_root() {
  const char* env = std::getenv("MNIST_DIR");
  return env && *env ? std::string(env) : user_data_dir("mnist");
}

Dataset decode_idx(std::span<const std::uint8_t> images, const std::string& images_source,
                   std::span<const std::uint8_t> labels, const std::string& labels_source,
                   const std::vector<std::string>& class_names) {
  ENGINE_CHECK(!class_names.empty(), "{}: no class names given", labels_source);
  const auto image_dims = parse_header(images, images_source, kImagesMagic, 3);
  const auto label_dims = parse_header(labels, labels_source, kLabelsMagic, 1);
  ENGINE_CHECK(image_dims[0] == label_dims[0], "{} holds {} images but {} holds {} labels", images_source,
               image_dims[0], labels_source, label_dims[0]);
  ENGINE_CHECK(image_dims[1] > 0 && image_dims[2] > 0, "{}: image size {} x {} is empty", images_source,
               image_dims[1], image_dims[2]);
  const auto label_bytes = labels.subspan(8);
  for (std::size_t i = 0; i < label_bytes.size(); ++i) {
    ENGINE_CHECK(label_bytes[i] < class_names.size(), "{}: label {} is {}, outside 0..{}", labels_source, i,
                 label_bytes[i], class_names.size() - 1);
  }
  Dataset d;
  d.channels = 1;
  d.height = static_cast<std::int64_t>(image_dims[1]);
  d.width = static_cast<std::int64_t>(image_dims[2]);
  d.images.assign(images.begin() + 16, images.end());
  d.labels.assign(label_bytes.begin(), label_bytes.end());
  d.class_names = class_names;
  validate(d, images_source);
  return d;
}

Dataset load_idx(const std::string& images_path, const std::string& labels_path,
                 const std::vector<std::string>& class_names) {
  const auto labels = read_file_maybe_gzip(labels_path);  // the small one first: fail fast
  const auto images = read_file_maybe_gzip(images_path);
  return decode_idx(images, images_path, labels, labels_path, class_names);
}

Dataset load_mnist(const std::string& root, Split split) {
  return load_pair(root.empty() ? default_mnist_root() : root, split, mnist_class_names(), "MNIST");
}

Dataset load_fashion_mnist(const std::string& root, Split split) {
  return load_pair(root.empty() ? std::string(kFashionMnistDebianDir) : root, split,
                   fashion_mnist_class_names(), "Fashion-MNIST");
}

}  // namespace engine::data
