#pragma once
// Labelled contact sheets of dataset samples: the first samples of a dataset (cnn_data --grid), or chosen
// samples with captions of their own (the misclassified test images, with their true and predicted classes).

#include <cstdint>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "data/dataset.h"
#include "data/image_codec.h"

namespace engine::apps {

// An RGB image of the first rows x cols samples of `dataset` (fewer if it is smaller), row by row, each
// scaled up by an integer factor so that it is at least ~64 pixels tall (x2 for CIFAR-10, x3 for MNIST), with
// its class name written underneath in stb_easy_font's bitmap font. Grey datasets are shown grey.
data::Image make_sample_grid(const data::Dataset& dataset, int rows, int cols);

// A batch as the model sees it, augmented and normalized (`images` float32 [B, C, H, W] on the host, either
// layout, each value (x / 255 - mean[c]) / std[c]; empty mean and std: x / 255), back to uint8 pixels
// (rounded, clamped to 0..255) as a dataset of its first `max_images` images with `labels` (int32 [B], host)
// and `class_names`: what the grids above draw for cnn_train --tensorboard's training samples. Throws
// engine::Error for other shapes or dtypes.
data::Dataset batch_as_dataset(const Tensor& images, const Tensor& labels, const std::vector<float>& mean,
                               const std::vector<float>& std, std::vector<std::string> class_names,
                               std::int64_t max_images = 32);

// The same sheet of the samples `indices` (in order, `cols` a row), each with captions[i] underneath (one
// line per '\n'). Throws engine::Error for an index outside the dataset or captions of another count.
data::Image make_captioned_grid(const data::Dataset& dataset, const std::vector<std::int64_t>& indices,
                                const std::vector<std::string>& captions, int cols);

}  // namespace engine::apps
