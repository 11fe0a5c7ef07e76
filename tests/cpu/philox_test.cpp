// Philox4x32-10 on the host: the published known-answer vectors, and the engine's (seed, offset, index)
// convention. The GPU test (tests/gpu/philox_test.cu) checks the device gives the same words.
#include "core/philox.h"

#include <set>

#include <gtest/gtest.h>

namespace engine {
namespace {

// Known-answer tests from Random123's kat_vectors (philox4x32, 10 rounds): counter, key -> output.
TEST(Philox, KnownAnswerVectors) {
  struct Kat {
    std::uint32_t ctr[4], key[2], out[4];
  };
  const Kat kats[] = {
      {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
      {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
       {0xffffffff, 0xffffffff},
       {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
      {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
       {0xa4093822, 0x299f31d0},
       {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
  };
  for (const Kat& k : kats) {
    const PhiloxBlock b = philox4x32_10(k.ctr, k.key);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(b.v[i], k.out[i]) << "word " << i;
  }
}

TEST(Philox, StreamConventionMapsSeedOffsetIndex) {
  // key = seed (low, high words); counter = (index low, index high, offset low, offset high).
  const std::uint64_t seed = 0x299f31d0a4093822ull, offset = 0x0370734413198a2eull,
                      index = 0x85a308d3243f6a88ull;
  const PhiloxBlock b = philox_block(seed, offset, index);
  EXPECT_EQ(b.v[0], 0xd16cfe09u);
  EXPECT_EQ(b.v[3], 0x24126ea1u);
  // Word i is word i % 4 of block i / 4: block index 0x243f6a88 with ctr[1] = 0 is a different block, so
  // check the word mapping on the first KAT (counter 0, key 0): words 0..3 of block 0.
  EXPECT_EQ(philox_word(0, 0, 2), 0xbc57ac4cu);
  EXPECT_EQ(philox_word(0, 0, 3), 0x9b00dbd8u);
  EXPECT_NE(philox_word(0, 0, 4), 0x6627e8d5u);  // block 1 starts at word 4
}

TEST(Philox, UniformIsInUnitIntervalAndExactAtTheEnds) {
  EXPECT_EQ(uniform_from_bits(0u), 0.0f);
  EXPECT_EQ(uniform_from_bits(0xffffffffu), 1.0f - 1.0f / 16777216.0f);
  double sum = 0.0;
  const int n = 100000;
  for (int i = 0; i < n; ++i) {
    const float u = philox_uniform(7, 3, static_cast<std::uint64_t>(i));
    ASSERT_GE(u, 0.0f);
    ASSERT_LT(u, 1.0f);
    sum += static_cast<double>(u);
  }
  // Mean of n uniforms: sd = sqrt(1/12/n) ~ 9.1e-4; 5 sd.
  EXPECT_NEAR(sum / n, 0.5, 5 * 9.13e-4);
}

TEST(Philox, DifferentSeedsAndOffsetsGiveDifferentStreams) {
  std::set<std::uint32_t> words;
  for (std::uint64_t seed = 0; seed < 4; ++seed)
    for (std::uint64_t offset = 0; offset < 4; ++offset) words.insert(philox_word(seed, offset, 0));
  EXPECT_EQ(words.size(), 16u);
}

}  // namespace
}  // namespace engine
