#pragma once
// A labelled contact sheet of dataset samples, for looking at a dataset (cnn_data --grid).

#include <cstdint>

#include "data/dataset.h"
#include "data/image_codec.h"

namespace engine::apps {

// An RGB image of the first rows x cols samples of `dataset` (fewer if it is smaller), row by row, each
// scaled up by an integer factor so that it is at least ~64 pixels tall (x2 for CIFAR-10, x3 for MNIST), with
// its class name written underneath in stb_easy_font's bitmap font. Grey datasets are shown grey.
data::Image make_sample_grid(const data::Dataset& dataset, int rows, int cols);

}  // namespace engine::apps
