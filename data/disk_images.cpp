#include "data/disk_images.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <mutex>
#include <set>

#include "core/error.h"
#include "data/augment_params.h"
#include "data/file_io.h"
#include "data/image_codec.h"
#include "data/resample.h"

namespace engine::data {
namespace {

constexpr int kChannels = 3;

// The largest JPEG reduction (8, 4, 2) that leaves the box at least the output size on both sides.
int dct_denominator(bool dct_scaling, const CropBox& box, std::int64_t out_h, std::int64_t out_w) {
  if (!dct_scaling) return 1;
  for (int d : {8, 4, 2}) {
    if (box.height >= out_h * d && box.width >= out_w * d) return d;
  }
  return 1;
}

// The file's pixels in `box`, resized to out_h x out_w, its `window` written planar to dst.
void decode_box(const std::vector<std::uint8_t>& bytes, const std::string& file, int channels, CropBox box,
                std::int64_t out_h, std::int64_t out_w, const PixelBox& window, bool dct_scaling,
                std::uint8_t* dst) {
  const int d = dct_denominator(dct_scaling, box, out_h, out_w);
  const InterleavedImage image = decode_interleaved(bytes, file, channels, d);
  if (d > 1) {  // the box in the scaled picture's pixels, kept inside it
    box.top = std::min(box.top / d, image.height - 1);
    box.left = std::min(box.left / d, image.width - 1);
    box.height = std::clamp<std::int64_t>(box.height / d, 1, image.height - box.top);
    box.width = std::clamp<std::int64_t>(box.width / d, 1, image.width - box.left);
  }
  const std::int64_t stride = image.width * channels;
  resample_bilinear(image.pixels.data() + box.top * stride + box.left * channels, stride, channels,
                    box.height, box.width, out_h, out_w, window, dst);
}

class DiskImages final : public SampleSource {
 public:
  DiskImages(FileList list, const DiskImageOptions& o) : list_(std::move(list)), o_(o) {}

  std::int32_t read(std::int64_t index, std::uint64_t epoch, std::uint8_t* dst) const override {
    const auto n = static_cast<std::int64_t>(list_.files.size());
    for (std::int64_t k = 0; k < n; ++k) {
      const std::int64_t i = (index + k) % n;
      try {
        decode(i, epoch, dst);
        return list_.labels[static_cast<std::size_t>(i)];
      } catch (const Error& e) {
        if (!o_.skip_bad_images) throw;
        const std::lock_guard<std::mutex> lock(mutex_);
        if (bad_.insert(i).second)
          std::fprintf(stderr, "skipped a bad image (--skip-bad-images): %s\n", e.what());
      }
    }
    ENGINE_FAIL("{}: every one of the {} images failed to decode", list_.files.front(), n);
  }

  std::string name(std::int64_t index) const override { return list_.files[static_cast<std::size_t>(index)]; }
  std::int64_t skipped() const override {
    const std::lock_guard<std::mutex> lock(mutex_);
    return static_cast<std::int64_t>(bad_.size());
  }

 private:
  void decode(std::int64_t i, std::uint64_t epoch, std::uint8_t* dst) const {
    const std::string& file = list_.files[static_cast<std::size_t>(i)];
    const std::vector<std::uint8_t> bytes = read_file(file);
    if (!o_.random_resized_crop) {
      decode_center_crop(bytes, file, kChannels, o_.resize, o_.image_size, o_.dct_scaling, dst);
      return;
    }
    const ImageInfo info = image_info(bytes, file);
    const std::int64_t size = o_.image_size;
    const CropBox box =
        random_resized_crop_box(info.height, info.width, o_.scale_min, o_.scale_max, o_.ratio_min,
                                o_.ratio_max, o_.seed, epoch, static_cast<std::uint64_t>(i));
    decode_box(bytes, file, kChannels, box, size, size, PixelBox{0, 0, size, size}, o_.dct_scaling, dst);
  }

  FileList list_;
  DiskImageOptions o_;
  mutable std::mutex mutex_;
  mutable std::set<std::int64_t> bad_;  // the samples found bad, each named once
};

}  // namespace

void decode_center_crop(const std::vector<std::uint8_t>& bytes, const std::string& file, int channels,
                        std::int64_t resize, std::int64_t crop, bool dct_scaling, std::uint8_t* dst) {
  const ImageInfo info = image_info(bytes, file);
  const PixelBox shape = resized_shape(info.height, info.width, resize);
  decode_box(bytes, file, channels, CropBox{0, 0, info.height, info.width}, shape.height, shape.width,
             center_crop_box(shape.height, shape.width, crop), dct_scaling, dst);
}

std::int64_t default_resize(std::int64_t image_size) { return (image_size * 256 + 112) / 224; }

Dataset disk_image_dataset(FileList list, const DiskImageOptions& options) {
  DiskImageOptions o = options;
  if (o.resize == 0) o.resize = default_resize(o.image_size);
  ENGINE_CHECK(o.image_size >= 8 && o.image_size <= 4096, "--image-size {}: expected 8 to 4096",
               o.image_size);
  ENGINE_CHECK(o.resize >= o.image_size, "--resize {}: smaller than --image-size {} (the center crop)",
               o.resize, o.image_size);
  ENGINE_CHECK(0 < o.scale_min && o.scale_min <= o.scale_max && o.scale_max <= 1.0 && 0 < o.ratio_min &&
                   o.ratio_min <= o.ratio_max,
               "RandomResizedCrop: scale ({}, {}) and ratio ({}, {}) must be ordered and positive",
               o.scale_min, o.scale_max, o.ratio_min, o.ratio_max);
  ENGINE_CHECK(!list.files.empty(), "an image dataset without images");
  Dataset d;
  d.channels = kChannels;
  d.height = o.image_size;
  d.width = o.image_size;
  d.labels = list.labels;
  d.class_names = list.class_names;
  d.source = std::make_shared<DiskImages>(std::move(list), o);
  validate(d, d.source->name(0));
  return d;
}

}  // namespace engine::data
