#pragma once
// A labelled image dataset, the common result of every reader: uint8 pixels held in memory (CIFAR-10,
// MNIST, Fashion-MNIST), or a source that reads each sample from disk when asked (a folder of images:
// data/disk_images.h), so that memory does not grow with the dataset.
//
// images: N x C x H x W, row-major, one byte per channel value (CIFAR-10: 3 x 32 x 32; MNIST: 1 x 28 x 28);
// empty when `source` is set. labels: N class indices in [0, class_names.size()).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace engine::data {

// Reads sample `index` of an on-disk dataset as the uint8 C x H x W image the dataset's size says (decoded,
// cropped and resized: the draws a pure function of the source's seed, `epoch` and `index`). Returns the
// label of the sample written: its own, or, when the source skips bad images, that of the sample that stood
// in for it. Throws engine::Error naming the file and what is wrong with it. Safe to call from several
// threads at once.
class SampleSource {
 public:
  virtual ~SampleSource() = default;
  virtual std::int32_t read(std::int64_t index, std::uint64_t epoch, std::uint8_t* dst) const = 0;
  // The file sample `index` is read from, for messages.
  virtual std::string name(std::int64_t index) const = 0;
  // Distinct images refused and skipped so far (0 unless the source skips bad images).
  virtual std::int64_t skipped() const { return 0; }
};

struct Dataset {
  std::int64_t channels = 0;
  std::int64_t height = 0;
  std::int64_t width = 0;
  std::vector<std::uint8_t> images;  // size() == size() * image_bytes(); empty when on_disk()
  std::vector<std::int32_t> labels;
  std::vector<std::string> class_names;
  std::shared_ptr<const SampleSource> source;  // set: the images are read from disk when needed

  std::int64_t size() const { return static_cast<std::int64_t>(labels.size()); }
  std::int64_t image_bytes() const { return channels * height * width; }
  bool on_disk() const { return source != nullptr; }
  // In memory only (on_disk() false): the pixels of sample i.
  const std::uint8_t* image(std::int64_t i) const { return images.data() + i * image_bytes(); }
  std::int64_t num_classes() const { return static_cast<std::int64_t>(class_names.size()); }
};

// Sample i's image_bytes() pixels into dst, from memory or from disk (epoch: the draws of a random crop);
// returns the label of what was written (see SampleSource::read).
std::int32_t read_sample(const Dataset& dataset, std::int64_t i, std::uint64_t epoch, std::uint8_t* dst);

// Throws engine::Error naming `source` when the parts disagree: pixel bytes vs count x image size, a label
// outside [0, num_classes), a non-positive image dimension. Every reader ends with it, so a partial or
// inconsistent dataset never reaches training.
void validate(const Dataset& dataset, const std::string& source);

}  // namespace engine::data
