#pragma once
// Labelled contact sheets of dataset samples: the first samples of a dataset (cnn_data --grid), or chosen
// samples with captions of their own (the misclassified test images, with their true and predicted classes).

#include <cstdint>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "data/image_codec.h"

namespace engine::apps {

// An RGB image of the first rows x cols samples of `dataset` (fewer if it is smaller), row by row, each
// scaled up by an integer factor so that it is at least ~64 pixels tall (x2 for CIFAR-10, x3 for MNIST), with
// its class name written underneath in stb_easy_font's bitmap font. Grey datasets are shown grey.
data::Image make_sample_grid(const data::Dataset& dataset, int rows, int cols);

// The same sheet of the samples `indices` (in order, `cols` a row), each with captions[i] underneath (one
// line per '\n'). Throws engine::Error for an index outside the dataset or captions of another count.
data::Image make_captioned_grid(const data::Dataset& dataset, const std::vector<std::int64_t>& indices,
                                const std::vector<std::string>& captions, int cols);

}  // namespace engine::apps
