#pragma once
// An image dataset that stays on disk: the files of a FileList (data/file_list.h), each read and decoded
// when its batch is assembled (by the loader's worker threads), then cut to the model's input as
// torchvision's ImageNet recipe does:
//  - training: RandomResizedCrop(image_size, scale, ratio) (the box drawn from (seed, epoch, sample index):
//    data/augment_params.h), the horizontal flip and Normalize left to the loader's Transform;
//  - evaluation: Resize(resize) (the shorter side) then CenterCrop(image_size).
// Resampling is Pillow's bilinear with antialiasing (data/resample.h), so a sample equals torchvision's on
// a PIL image for the same box. With dct_scaling, a JPEG much larger than the box needs is decoded at 1/2,
// 1/4 or 1/8 of its size by libjpeg-turbo (the box still at least image_size after it): much faster, and
// then no longer Pillow's bytes.
//
// Memory: the file names and labels; pixels exist only for the samples being assembled.
//
// A bad image (truncated, corrupt, unsupported, deleted or made unreadable after indexing) throws
// engine::Error naming the file and what is wrong, which stops the run between checkpoints; with
// skip_bad_images it is named on stderr (once), counted (SampleSource::skipped: distinct files) and replaced
// by the next good sample of the dataset (index + 1, + 2, ..., wrapping), label and all, so batches keep
// their size and the replacement is the same whatever the worker count.

#include <cstdint>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "data/file_list.h"

namespace engine::data {

struct DiskImageOptions {
  std::int64_t image_size = 224;  // the square the model sees
  std::int64_t resize = 0;        // evaluation's shorter side before the center crop; 0: image_size * 8 / 7
  bool random_resized_crop = false;  // training's RandomResizedCrop; false: evaluation's resize + center crop
  double scale_min = 0.08, scale_max = 1.0;
  double ratio_min = 3.0 / 4.0, ratio_max = 4.0 / 3.0;
  std::uint64_t seed = 0;
  bool dct_scaling = true;
  bool skip_bad_images = false;
};

// torchvision's evaluation size for a crop of `image_size`: Resize(256) for CenterCrop(224), scaled (round
// half up of image_size * 256 / 224).
std::int64_t default_resize(std::int64_t image_size);

// Evaluation's transform of one encoded image (`file` names it in messages): Resize(resize) of the shorter
// side, then CenterCrop(crop), as `channels` (1, 3 or 4) planar bytes, channels x crop x crop, to dst. What
// the dataset's evaluation samples are, and what cnn_predict feeds a model trained on one (apps/predict.h).
// Throws engine::Error naming the file for a bad image or a crop larger than the resized image.
void decode_center_crop(const std::vector<std::uint8_t>& bytes, const std::string& file, int channels,
                        std::int64_t resize, std::int64_t crop, bool dct_scaling, std::uint8_t* dst);

// An RGB dataset of list.files, images image_size x image_size. Throws engine::Error for an empty list or
// options out of range (image_size < 8 or > 4096, resize < image_size, scale/ratio bounds not ordered and
// positive).
Dataset disk_image_dataset(FileList list, const DiskImageOptions& options);

}  // namespace engine::data
