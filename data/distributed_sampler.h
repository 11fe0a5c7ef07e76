#pragma once
// DistributedSampler: which dataset indices one rank visits in one epoch, with the semantics of PyTorch's
// torch.utils.data.DistributedSampler.
//
//  - Every rank computes the same permutation of 0..N-1 for an epoch (shuffle on) or takes 0..N-1 in order
//    (shuffle off). The permutation is a Fisher-Yates shuffle driven by Philox keyed by seed + epoch, as
//    PyTorch seeds torch.randperm's generator with seed + epoch. The permutation itself is not torch's (we
//    cannot reproduce torch's generator, and nothing needs us to): same seed and epoch give the same order
//    here on every rank and every run; a different epoch gives a different one.
//  - Mode::Pad (drop_last = false): the list is padded to total_size = ceil(N / W) * W by repeating its head,
//    cyclically when the padding exceeds N (torch: indices += (indices * ceil(padding / N))[:padding]).
//    Mode::DropLast (drop_last = true): the list is cut to floor(N / W) * W.
//  - Rank r takes positions r, r + W, r + 2W, ... of that list, so every rank gets total_size / W indices.
//  - The position (our addition, for resuming mid-epoch, as torchdata's StatefulDistributedSampler): the
//    first `position` entries of the epoch's padded list are skipped, so rank r takes positions
//    position + r, position + r + W, ... A training step of B samples per rank consumes B * W consecutive
//    entries of that list, so after k steps position = k * B * W and the ranks continue exactly where they
//    stopped. set_epoch() resets it to 0.
//  - Mode::EvalNoPad (our addition, for evaluation): no padding and no trimming; rank r takes positions
//    r, r + W, ... < N. The shares are disjoint and their union is exactly the dataset, so a metric summed
//    over ranks (correct count, loss sum) equals the single-process metric exactly. Shares may differ in size
//    by one (a rank may get none when W > N).

#include <cstdint>
#include <vector>

namespace engine::data {

class DistributedSampler {
 public:
  enum class Mode { Pad, DropLast, EvalNoPad };

  // PyTorch's constructor. Throws engine::Error unless dataset_size >= 1, world_size >= 1 and
  // 0 <= rank < world_size.
  DistributedSampler(std::int64_t dataset_size, int world_size, int rank, bool shuffle = true,
                     std::uint64_t seed = 0, bool drop_last = false);

  // The evaluation sampler: disjoint shares whose union is the dataset (Mode::EvalNoPad).
  static DistributedSampler eval_no_pad(std::int64_t dataset_size, int world_size, int rank,
                                        bool shuffle = false, std::uint64_t seed = 0);

  // Selects the epoch's permutation (PyTorch: call before each epoch, or every epoch repeats epoch 0's
  // order).
  void set_epoch(std::uint64_t epoch) {
    epoch_ = epoch;
    position_ = 0;
  }
  std::uint64_t epoch() const { return epoch_; }

  // Skips the first `position` entries of the current epoch's list (see above). Throws engine::Error unless
  // 0 <= position <= total_size() and position is a multiple of the world size (the ranks' shares stay
  // equal).
  void set_position(std::int64_t position);
  std::int64_t position() const { return position_; }

  // This rank's dataset indices for the current epoch, in visiting order; size() == num_samples().
  std::vector<std::int64_t> indices() const;
  // The epoch's order of 0..N-1 before padding or trimming, the same on every rank.
  std::vector<std::int64_t> permutation() const;

  std::int64_t num_samples() const;  // this rank's share (after the position)
  std::int64_t total_size() const;   // the padded (or trimmed) list length; N in EvalNoPad mode
  std::int64_t dataset_size() const { return dataset_size_; }
  int world_size() const { return world_size_; }
  int rank() const { return rank_; }
  bool shuffle() const { return shuffle_; }
  std::uint64_t seed() const { return seed_; }
  Mode mode() const { return mode_; }

 private:
  DistributedSampler(Mode mode, std::int64_t dataset_size, int world_size, int rank, bool shuffle,
                     std::uint64_t seed);

  Mode mode_;
  std::int64_t dataset_size_;
  int world_size_;
  int rank_;
  bool shuffle_;
  std::uint64_t seed_;
  std::uint64_t epoch_ = 0;
  std::int64_t position_ = 0;
};

// Fisher-Yates permutation of 0..n-1 from Philox keyed by `key` (the sampler passes seed + epoch).
std::vector<std::int64_t> philox_permutation(std::int64_t n, std::uint64_t key);

}  // namespace engine::data
