#pragma once
// A dataset of random pixels (splitmix64, fixed seed) and labels i % 10, for benchmarks that need the shape
// of real data but not its content (the loader and the training step do the same work on any pixels).

#include <cstdint>

#include "data/dataset.h"

namespace engine::bench {

engine::data::Dataset random_dataset(std::int64_t n, int channels, int height, int width);

}  // namespace engine::bench
