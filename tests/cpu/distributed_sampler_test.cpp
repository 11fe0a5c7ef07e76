// DistributedSampler against PyTorch's rules: a literal re-implementation of torch's code path gives the
// expected index list for every (dataset size, world size, rank, drop_last, shuffle), plus the properties
// training relies on (one permutation for all ranks, a new one each epoch, disjoint eval shares).

#include "data/distributed_sampler.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"

namespace engine::data {
namespace {

using Indices = std::vector<std::int64_t>;

// torch/utils/data/distributed.py, DistributedSampler.__init__ and __iter__, transcribed.
Indices torch_rank_indices(Indices indices, std::int64_t n, std::int64_t world, std::int64_t rank,
                           bool drop_last) {
  std::int64_t num_samples = 0;
  if (drop_last && n % world != 0) {
    num_samples =
        static_cast<std::int64_t>(std::ceil(static_cast<double>(n - world) / static_cast<double>(world)));
  } else {
    num_samples = static_cast<std::int64_t>(std::ceil(static_cast<double>(n) / static_cast<double>(world)));
  }
  const std::int64_t total_size = num_samples * world;
  if (!drop_last) {
    const std::int64_t padding = total_size - static_cast<std::int64_t>(indices.size());
    if (padding <= static_cast<std::int64_t>(indices.size())) {
      indices.insert(indices.end(), indices.begin(), indices.begin() + padding);
    } else {
      const auto reps = static_cast<std::int64_t>(
          std::ceil(static_cast<double>(padding) / static_cast<double>(indices.size())));
      Indices repeated;
      for (std::int64_t r = 0; r < reps; ++r) repeated.insert(repeated.end(), indices.begin(), indices.end());
      indices.insert(indices.end(), repeated.begin(), repeated.begin() + padding);
    }
  } else {
    indices.resize(static_cast<std::size_t>(total_size));
  }
  EXPECT_EQ(static_cast<std::int64_t>(indices.size()), total_size);
  Indices mine;
  for (std::int64_t p = rank; p < total_size; p += world)
    mine.push_back(indices[static_cast<std::size_t>(p)]);
  EXPECT_EQ(static_cast<std::int64_t>(mine.size()), num_samples);
  return mine;
}

Indices iota_indices(std::int64_t n) {
  Indices v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), std::int64_t{0});
  return v;
}

bool is_permutation_of_range(Indices v) {
  std::sort(v.begin(), v.end());
  return v == iota_indices(static_cast<std::int64_t>(v.size()));
}

const std::int64_t kSizes[] = {1, 2, 5, 10, 11, 50};
const int kWorlds[] = {1, 2, 3, 4, 7};

TEST(DistributedSampler, MatchesTorchCodePath) {
  for (std::int64_t n : kSizes) {
    for (int world : kWorlds) {
      for (bool drop_last : {false, true}) {
        for (bool shuffle : {false, true}) {
          for (std::uint64_t epoch : {0u, 3u}) {
            for (int rank = 0; rank < world; ++rank) {
              DistributedSampler s(n, world, rank, shuffle, /*seed=*/17, drop_last);
              s.set_epoch(epoch);
              const Indices perm = s.permutation();
              ASSERT_TRUE(is_permutation_of_range(perm));
              if (!shuffle) {
                EXPECT_EQ(perm, iota_indices(n));
              }
              const Indices expected = torch_rank_indices(perm, n, world, rank, drop_last);
              EXPECT_EQ(s.indices(), expected) << "n " << n << " world " << world << " rank " << rank
                                               << " drop_last " << drop_last << " shuffle " << shuffle;
              EXPECT_EQ(s.num_samples(), static_cast<std::int64_t>(expected.size()));
              EXPECT_EQ(s.total_size(), s.num_samples() * world);
            }
          }
        }
      }
    }
  }
}

TEST(DistributedSampler, PaddedSharesCoverEverythingAndOverlapOnlyByPadding) {
  for (std::int64_t n : kSizes) {
    for (int world : kWorlds) {
      std::map<std::int64_t, int> count;
      std::int64_t total = 0;
      std::vector<Indices> shares;
      for (int rank = 0; rank < world; ++rank) {
        DistributedSampler s(n, world, rank, /*shuffle=*/true, /*seed=*/5);
        s.set_epoch(2);
        shares.push_back(s.indices());
        EXPECT_EQ(static_cast<std::int64_t>(shares.back().size()), (n + world - 1) / world);
        for (std::int64_t i : shares.back()) ++count[i];
        total += static_cast<std::int64_t>(shares.back().size());
      }
      EXPECT_EQ(static_cast<std::int64_t>(count.size()), n) << "every index is visited";
      EXPECT_EQ(total, (n + world - 1) / world * world);
      // Interleaving the shares back (position k*W + r is rank r's k-th) gives the permutation, then its head
      // repeated: the first n positions are distinct, the rest are padding.
      DistributedSampler any(n, world, 0, true, 5);
      any.set_epoch(2);
      const Indices perm = any.permutation();
      for (std::int64_t p = 0; p < total; ++p) {
        const std::int64_t got =
            shares[static_cast<std::size_t>(p % world)][static_cast<std::size_t>(p / world)];
        EXPECT_EQ(got, perm[static_cast<std::size_t>(p % n)]) << "position " << p;
      }
    }
  }
}

TEST(DistributedSampler, DropLastSizes) {
  const struct {
    std::int64_t n;
    int world;
    std::int64_t per_rank;
  } cases[] = {{10, 3, 3}, {11, 3, 3}, {11, 4, 2}, {12, 4, 3}, {1, 4, 0}, {2, 7, 0}, {50, 7, 7}, {1, 1, 1}};
  for (const auto& c : cases) {
    std::map<std::int64_t, int> count;
    for (int rank = 0; rank < c.world; ++rank) {
      DistributedSampler s(c.n, c.world, rank, true, 0, /*drop_last=*/true);
      EXPECT_EQ(s.num_samples(), c.per_rank) << c.n << " over " << c.world;
      EXPECT_EQ(static_cast<std::int64_t>(s.indices().size()), c.per_rank);
      for (std::int64_t i : s.indices()) ++count[i];
    }
    for (const auto& [index, times] : count) EXPECT_EQ(times, 1) << "index " << index << " repeated";
  }
}

TEST(DistributedSampler, SamePermutationOnEveryRankNewOneEachEpoch) {
  const std::int64_t n = 50;
  DistributedSampler r0(n, 4, 0, true, 1234), r3(n, 4, 3, true, 1234);
  r0.set_epoch(0);
  r3.set_epoch(0);
  const Indices e0 = r0.permutation();
  EXPECT_EQ(e0, r3.permutation());
  EXPECT_NE(e0, iota_indices(n)) << "shuffled";
  r0.set_epoch(1);
  r3.set_epoch(1);
  EXPECT_EQ(r0.permutation(), r3.permutation());
  EXPECT_NE(r0.permutation(), e0) << "the next epoch is reshuffled";
  // PyTorch seeds the generator with seed + epoch.
  DistributedSampler other_seed(n, 4, 0, true, 1235);
  EXPECT_EQ(other_seed.permutation(), r0.permutation());
}

TEST(DistributedSampler, IdenticalAcrossRunsWithTheSameSeed) {
  DistributedSampler a(1000, 3, 1, true, 99), b(1000, 3, 1, true, 99), c(1000, 3, 1, true, 7);
  a.set_epoch(5);
  b.set_epoch(5);
  c.set_epoch(5);
  EXPECT_EQ(a.indices(), b.indices());
  EXPECT_NE(a.indices(), c.indices());
  // A pinned value: catches an accidental change of the generator or the shuffle (which would silently change
  // every experiment's data order).
  DistributedSampler pinned(10, 1, 0, true, 0);
  EXPECT_EQ(pinned.permutation(), (Indices{4, 5, 7, 9, 1, 0, 8, 2, 3, 6}));
}

TEST(DistributedSampler, ShuffleIsUniformOverPermutations) {
  // All 24 orders of 4 elements, 24000 epochs: each order 1000 times, sigma = sqrt(1000 * 23/24) ~ 31.
  std::map<Indices, int> seen;
  DistributedSampler s(4, 1, 0, true, 42);
  for (std::uint64_t e = 0; e < 24000; ++e) {
    s.set_epoch(e);
    ++seen[s.permutation()];
  }
  EXPECT_EQ(seen.size(), 24u);
  for (const auto& [perm, times] : seen) EXPECT_NEAR(times, 1000, 5 * 31);
}

TEST(DistributedSampler, ShuffleOffKeepsOrder) {
  DistributedSampler s(11, 3, 1, /*shuffle=*/false);
  s.set_epoch(9);
  EXPECT_EQ(s.indices(), (Indices{1, 4, 7, 10}));
  DistributedSampler padded(11, 3, 2, false);
  EXPECT_EQ(padded.indices(), (Indices{2, 5, 8, 0}));  // padded with the head: 0
}

TEST(DistributedSampler, EvalNoPadSharesAreDisjointAndCoverTheDataset) {
  for (std::int64_t n : kSizes) {
    for (int world : kWorlds) {
      for (bool shuffle : {false, true}) {
        Indices all;
        std::int64_t sum = 0;
        for (int rank = 0; rank < world; ++rank) {
          DistributedSampler s = DistributedSampler::eval_no_pad(n, world, rank, shuffle, 3);
          EXPECT_EQ(s.mode(), DistributedSampler::Mode::EvalNoPad);
          const Indices mine = s.indices();
          EXPECT_EQ(static_cast<std::int64_t>(mine.size()), s.num_samples());
          sum += s.num_samples();
          all.insert(all.end(), mine.begin(), mine.end());
        }
        EXPECT_EQ(sum, n) << n << " over " << world;
        EXPECT_TRUE(is_permutation_of_range(all)) << "disjoint, and the union is the dataset";
      }
    }
  }
  EXPECT_EQ(DistributedSampler::eval_no_pad(10, 4, 1).indices(), (Indices{1, 5, 9}));
  EXPECT_EQ(DistributedSampler::eval_no_pad(10, 4, 3).indices(), (Indices{3, 7}));
  EXPECT_TRUE(DistributedSampler::eval_no_pad(1, 7, 6).indices().empty());
}

void expect_error_mentioning(const std::function<void()>& f, const std::string& text) {
  try {
    f();
    ADD_FAILURE() << "no engine::Error thrown; expected one mentioning '" << text << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
  }
}

// Resuming mid-epoch: after k steps of B samples per rank, every rank continues with the tail of its own
// uninterrupted list (for any world size, padded or trimmed); a new epoch starts from the beginning again.
TEST(DistributedSampler, APositionContinuesEachRanksListWhereKStepsLeftIt) {
  for (const bool drop_last : {false, true}) {
    for (const int world : {1, 2, 3}) {
      for (int rank = 0; rank < world; ++rank) {
        DistributedSampler full(23, world, rank, true, 5, drop_last);
        full.set_epoch(4);
        const Indices all = full.indices();
        for (const std::int64_t batch : {1, 2, 4}) {
          for (std::int64_t k = 0; k * batch <= static_cast<std::int64_t>(all.size()); ++k) {
            DistributedSampler resumed(23, world, rank, true, 5, drop_last);
            resumed.set_epoch(4);
            resumed.set_position(k * batch * world);
            const Indices tail(all.begin() + k * batch, all.end());
            EXPECT_EQ(resumed.indices(), tail) << world << " " << rank << " " << batch << " " << k;
            EXPECT_EQ(resumed.num_samples(), static_cast<std::int64_t>(tail.size()));
            resumed.set_epoch(5);
            EXPECT_EQ(resumed.position(), 0);
          }
        }
      }
    }
  }
  DistributedSampler s(10, 2, 0);
  expect_error_mentioning([&] { s.set_position(3); }, "position 3");    // not a multiple of 2
  expect_error_mentioning([&] { s.set_position(12); }, "position 12");  // past the list
  expect_error_mentioning([&] { s.set_position(-2); }, "position -2");
}

TEST(DistributedSampler, BadArgumentsThrow) {
  expect_error_mentioning([] { DistributedSampler(10, 0, 0); }, "world_size is 0");
  expect_error_mentioning([] { DistributedSampler(10, -2, 0); }, "world_size is -2");
  expect_error_mentioning([] { DistributedSampler(10, 4, 4); }, "rank 4");
  expect_error_mentioning([] { DistributedSampler(10, 4, -1); }, "rank -1");
  expect_error_mentioning([] { DistributedSampler(0, 1, 0); }, "dataset_size is 0");
  expect_error_mentioning([] { DistributedSampler::eval_no_pad(10, 2, 2); }, "rank 2");
}

// Elastic resume (torchrun --nnodes=1:2 losing a host): W ranks train k steps of B samples each, the run
// stops after a checkpoint at position k*B*W, and W' ranks continue from that position. Between them they
// visit every sample of the epoch exactly once when N is a multiple of both worlds (no sample twice, none
// lost); otherwise every sample at least once, and the repeats are only the new world's padding.
TEST(DistributedSampler, ANewWorldSizeContinuesWithEverySampleTheOldWorldHadNotTrained) {
  struct Case {
    std::int64_t n;
    int old_world, new_world, batch, steps;
  };
  for (const Case c :
       {Case{1200, 4, 2, 4, 10}, Case{48, 2, 4, 2, 3}, Case{50, 4, 3, 3, 2}, Case{37, 4, 2, 2, 1}}) {
    std::vector<int> seen(static_cast<std::size_t>(c.n), 0);
    for (int r = 0; r < c.old_world; ++r) {
      DistributedSampler s(c.n, c.old_world, r, /*shuffle=*/true, /*seed=*/9);
      s.set_epoch(3);
      const Indices mine = s.indices();
      for (int i = 0; i < c.batch * c.steps; ++i)
        ++seen[static_cast<std::size_t>(mine[static_cast<std::size_t>(i)])];
    }
    const std::int64_t position = std::int64_t{c.batch} * c.steps * c.old_world;
    std::int64_t visits = 0;
    for (int r = 0; r < c.new_world; ++r) {
      DistributedSampler s(c.n, c.new_world, r, /*shuffle=*/true, /*seed=*/9);
      s.set_epoch(3);
      ASSERT_EQ(position % c.new_world, 0);
      s.set_position(position);
      for (const std::int64_t i : s.indices()) ++seen[static_cast<std::size_t>(i)];
      visits += static_cast<std::int64_t>(s.indices().size());
    }
    const std::int64_t padded = (c.n + c.new_world - 1) / c.new_world * c.new_world;
    EXPECT_EQ(position + visits, padded) << "n " << c.n;
    for (std::int64_t i = 0; i < c.n; ++i) {
      EXPECT_GE(seen[static_cast<std::size_t>(i)], 1) << "sample " << i << " lost, n " << c.n;
      if (c.n % c.old_world == 0 && c.n % c.new_world == 0) {
        EXPECT_EQ(seen[static_cast<std::size_t>(i)], 1) << "sample " << i << " twice, n " << c.n;
      }
    }
  }
}

}  // namespace
}  // namespace engine::data
