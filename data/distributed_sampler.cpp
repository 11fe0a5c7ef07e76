#include "data/distributed_sampler.h"

#include <numeric>
#include <utility>

#include "core/error.h"
#include "core/philox.h"
#include "data/augment_params.h"

namespace engine::data {

std::vector<std::int64_t> philox_permutation(std::int64_t n, std::uint64_t key) {
  ENGINE_CHECK(n >= 0, "permutation of {} elements", n);
  std::vector<std::int64_t> perm(static_cast<std::size_t>(n));
  std::iota(perm.begin(), perm.end(), std::int64_t{0});
  // Step i swaps position i with a uniform j in [0, i], drawn from 64 bits of Philox block i (the modulo
  // bias is below n / 2^64).
  for (std::int64_t i = n - 1; i >= 1; --i) {
    const PhiloxBlock bits = philox_block(key, kSamplerStream, static_cast<std::uint64_t>(i));
    const std::uint64_t r = (static_cast<std::uint64_t>(bits.v[0]) << 32) | bits.v[1];
    const auto j = static_cast<std::int64_t>(r % static_cast<std::uint64_t>(i + 1));
    std::swap(perm[static_cast<std::size_t>(i)], perm[static_cast<std::size_t>(j)]);
  }
  return perm;
}

DistributedSampler::DistributedSampler(Mode mode, std::int64_t dataset_size, int world_size, int rank,
                                       bool shuffle, std::uint64_t seed)
    : mode_(mode),
      dataset_size_(dataset_size),
      world_size_(world_size),
      rank_(rank),
      shuffle_(shuffle),
      seed_(seed) {
  ENGINE_CHECK(dataset_size >= 1, "DistributedSampler: dataset_size is {}, must be at least 1", dataset_size);
  ENGINE_CHECK(world_size >= 1, "DistributedSampler: world_size is {}, must be at least 1", world_size);
  ENGINE_CHECK(rank >= 0 && rank < world_size,
               "DistributedSampler: rank {} is outside [0, {}) for world_size {}", rank, world_size,
               world_size);
}

DistributedSampler::DistributedSampler(std::int64_t dataset_size, int world_size, int rank, bool shuffle,
                                       std::uint64_t seed, bool drop_last)
    : DistributedSampler(drop_last ? Mode::DropLast : Mode::Pad, dataset_size, world_size, rank, shuffle,
                         seed) {}

DistributedSampler DistributedSampler::eval_no_pad(std::int64_t dataset_size, int world_size, int rank,
                                                   bool shuffle, std::uint64_t seed) {
  return DistributedSampler(Mode::EvalNoPad, dataset_size, world_size, rank, shuffle, seed);
}

std::int64_t DistributedSampler::total_size() const {
  const std::int64_t w = world_size_;
  switch (mode_) {
    case Mode::Pad: return (dataset_size_ + w - 1) / w * w;
    case Mode::DropLast: return dataset_size_ / w * w;
    case Mode::EvalNoPad: return dataset_size_;
  }
  return 0;
}

void DistributedSampler::set_position(std::int64_t position) {
  ENGINE_CHECK(position >= 0 && position <= total_size() && position % world_size_ == 0,
               "DistributedSampler: position {} is not a multiple of the world size {} in [0, {}]", position,
               world_size_, total_size());
  position_ = position;
}

std::int64_t DistributedSampler::num_samples() const {
  const std::int64_t w = world_size_;
  const std::int64_t first = position_ + rank_;  // this rank's first position in the list
  const std::int64_t end = mode_ == Mode::EvalNoPad ? dataset_size_ : total_size();
  return first < end ? (end - first + w - 1) / w : 0;
}

std::vector<std::int64_t> DistributedSampler::permutation() const {
  if (shuffle_) return philox_permutation(dataset_size_, seed_ + epoch_);
  std::vector<std::int64_t> order(static_cast<std::size_t>(dataset_size_));
  std::iota(order.begin(), order.end(), std::int64_t{0});
  return order;
}

std::vector<std::int64_t> DistributedSampler::indices() const {
  const std::vector<std::int64_t> order = permutation();
  // Padding repeats the list cyclically (position p of the padded list is order[p % N]), which is what
  // torch's `indices += indices[:padding]` and its repeat-when-short branch both produce.
  const std::int64_t total = total_size();
  std::vector<std::int64_t> mine;
  mine.reserve(static_cast<std::size_t>(num_samples()));
  for (std::int64_t p = position_ + rank_; p < total; p += world_size_) {
    mine.push_back(order[static_cast<std::size_t>(p % dataset_size_)]);
  }
  return mine;
}

}  // namespace engine::data
