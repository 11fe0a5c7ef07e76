#pragma once
// Training-time transforms of uint8 images into float32 NCHW network input, on the CPU and on CUDA:
// torchvision's RandomCrop(size, padding = pad) with zero padding, RandomHorizontalFlip(0.5), ToTensor and
// Normalize(mean, std), as one pass per image.
//
// Random draws are a pure function of (seed, epoch, dataset sample index): see data/augment_params.h, the
// single definition both devices use. The CPU output and the CUDA output for the same samples are bitwise
// equal (integer-only crop and flip; the normalization is correctly rounded on both sides).
//
// The CPU path works row by row: a crop is a shifted (or, flipped, a reversed) row range plus padding, and
// the normalization is a 256-entry table per channel built once with the same normalize_value() the kernel
// evaluates, so the inner loop is a byte load and a table load.

#include <cstdint>
#include <vector>

#include "core/layout.h"
#include "core/tensor.h"
#include "data/augment_params.h"
#include "data/dataset.h"

namespace engine::data {

struct TransformConfig {
  bool random_crop = false;
  std::int32_t crop_padding = 4;  // zero padding on each side; the crop keeps the image's size
  bool random_flip = false;
  bool alternate_flip = false;  // airbench94: mirror on alternate epochs, random phase per image
  bool reflect_pad = false;     // airbench94's translate: pad by reflection, not zeros
  bool fixed_view = false;      // test-time augmentation: this view for every image (see view())
  std::int32_t view_dx = 0, view_dy = 0;
  bool view_flip = false;
  // Per channel, in units of x / 255 (torchvision's convention). Empty: mean 0 and std 1 for every channel,
  // i.e. plain x / 255.
  std::vector<float> mean;
  std::vector<float> std;
  std::uint64_t seed = 0;

  // Random crop with padding `pad`, random flip, normalize: the CIFAR-10 training recipe.
  static TransformConfig train(std::vector<float> mean, std::vector<float> std, std::uint64_t seed,
                               std::int32_t pad = 4);
  // airbench94's training augmentation: flip alternating by epoch, translate by up to `pad` pixels with
  // reflection padding, normalize.
  static TransformConfig flip_translate(std::vector<float> mean, std::vector<float> std, std::uint64_t seed,
                                        std::int32_t pad = 2);
  // One fixed view for test-time augmentation: the window at (dx, dy) of the image padded by `pad`
  // (reflection, as airbench94's TTA), mirrored when `flip`. dx = dy = pad, flip: the plain mirror.
  static TransformConfig view(std::vector<float> mean, std::vector<float> std, std::int32_t pad,
                              std::int32_t dx, std::int32_t dy, bool flip);
  // Normalize only: evaluation.
  static TransformConfig eval(std::vector<float> mean, std::vector<float> std);
};

// Per-channel mean and standard deviation of x / 255 over every pixel of every image (population standard
// deviation, ddof = 0, as the usual CIFAR-10 figures 0.4914/0.2470 ... are computed). Exact integer sums,
// finished in double. An on-disk dataset: over 512 of its images evenly spread (all when fewer), as epoch 0
// reads them. Throws engine::Error for an empty or inconsistent dataset.
struct ChannelStats {
  std::vector<float> mean;
  std::vector<float> std;
};
ChannelStats channel_mean_std(const Dataset& dataset);

class Transform {
 public:
  // Throws engine::Error for mean/std of different lengths, a std that is not positive and finite, or a
  // negative padding.
  explicit Transform(TransformConfig config = {});

  const TransformConfig& config() const { return config_; }
  AugmentSpec spec() const;
  AugmentDraw draw(std::uint64_t epoch, std::int64_t sample_index) const;
  // The normalization of channel c (0 and 1 where the config has no mean/std).
  float mean(std::int64_t c) const;
  float std_dev(std::int64_t c) const;

  // One image: src uint8 [channels, height, width] (dataset sample `sample_index`) -> dst float32, same
  // shape.
  void apply(const std::uint8_t* src, std::int64_t channels, std::int64_t height, std::int64_t width,
             std::int64_t sample_index, std::uint64_t epoch, float* dst) const;

  // The same into dst in `layout` (NHWC: channels last, [height, width, channels]); `scratch` is the NCHW
  // image on the way (resized as needed, so a caller reuses one across images).
  void apply_in_layout(const std::uint8_t* src, std::int64_t channels, std::int64_t height,
                       std::int64_t width, std::int64_t sample_index, std::uint64_t epoch, Layout layout,
                       float* dst, std::vector<float>& scratch) const;

  // A batch: images uint8 [B, C, H, W] (NCHW); sample_ids int32 [B], the dataset index of each image (it keys
  // the image's draw); out float32 [B, C, H, W] in its own layout (NHWC: channels last); all three on one
  // device. CUDA tensors: queued on `stream`.
  void apply_batch(const Tensor& images, const Tensor& sample_ids, std::uint64_t epoch, Tensor& out,
                   void* stream = nullptr) const;

 private:
  void check_channels(std::int64_t channels) const;
  const float* table(std::int64_t c) const;

  TransformConfig config_;
  std::vector<float> table_;  // [channels or 1][256]: normalize_value(x, mean[c], std[c])
};

}  // namespace engine::data
