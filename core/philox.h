#pragma once
// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11): a counter-based
// generator. Output depends only on (key, counter), so the host and a CUDA thread that ask for the same
// (seed, offset, index) get the same bits, whichever thread, rank or device asks. No state to carry.
//
// Convention used across the engine: key = seed; counter = (index, offset) where `offset` names a use
// (a dropout call, an augmentation epoch) and `index` the 4-word block within it. Element i of a stream
// is word i % 4 of block i / 4.

#include <cstdint>

#include "core/host_device.h"

namespace engine {

struct PhiloxBlock {
  std::uint32_t v[4];
};

namespace philox_detail {
constexpr std::uint32_t kMul0 = 0xD2511F53u;
constexpr std::uint32_t kMul1 = 0xCD9E8D57u;
constexpr std::uint32_t kWeyl0 = 0x9E3779B9u;  // golden ratio
constexpr std::uint32_t kWeyl1 = 0xBB67AE85u;  // sqrt(3) - 1

ENGINE_HOST_DEVICE void mulhilo(std::uint32_t a, std::uint32_t b, std::uint32_t& hi, std::uint32_t& lo) {
  const std::uint64_t p = static_cast<std::uint64_t>(a) * b;
  hi = static_cast<std::uint32_t>(p >> 32);
  lo = static_cast<std::uint32_t>(p);
}

ENGINE_HOST_DEVICE void round(std::uint32_t c[4], const std::uint32_t k[2]) {
  std::uint32_t hi0, lo0, hi1, lo1;
  mulhilo(kMul0, c[0], hi0, lo0);
  mulhilo(kMul1, c[2], hi1, lo1);
  const std::uint32_t n0 = hi1 ^ c[1] ^ k[0];
  const std::uint32_t n2 = hi0 ^ c[3] ^ k[1];
  c[0] = n0;
  c[1] = lo1;
  c[2] = n2;
  c[3] = lo0;
}
}  // namespace philox_detail

// The raw generator: 10 rounds of Philox4x32 on `counter` with `key`.
ENGINE_HOST_DEVICE PhiloxBlock philox4x32_10(const std::uint32_t counter[4], const std::uint32_t key[2]) {
  std::uint32_t c[4] = {counter[0], counter[1], counter[2], counter[3]};
  std::uint32_t k[2] = {key[0], key[1]};
  for (int r = 0; r < 10; ++r) {
    if (r > 0) {
      k[0] += philox_detail::kWeyl0;
      k[1] += philox_detail::kWeyl1;
    }
    philox_detail::round(c, k);
  }
  return {{c[0], c[1], c[2], c[3]}};
}

// Block `index` of the stream named by (seed, offset).
ENGINE_HOST_DEVICE PhiloxBlock philox_block(std::uint64_t seed, std::uint64_t offset, std::uint64_t index) {
  const std::uint32_t counter[4] = {
      static_cast<std::uint32_t>(index), static_cast<std::uint32_t>(index >> 32),
      static_cast<std::uint32_t>(offset), static_cast<std::uint32_t>(offset >> 32)};
  const std::uint32_t key[2] = {static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32)};
  return philox4x32_10(counter, key);
}

// Word i of the stream (seed, offset).
ENGINE_HOST_DEVICE std::uint32_t philox_word(std::uint64_t seed, std::uint64_t offset, std::uint64_t i) {
  return philox_block(seed, offset, i / 4).v[i % 4];
}

// A float in [0, 1) from the top 24 bits: exact in float32, identical on host and device.
ENGINE_HOST_DEVICE float uniform_from_bits(std::uint32_t bits) {
  return static_cast<float>(bits >> 8) * (1.0f / 16777216.0f);
}

ENGINE_HOST_DEVICE float philox_uniform(std::uint64_t seed, std::uint64_t offset, std::uint64_t i) {
  return uniform_from_bits(philox_word(seed, offset, i));
}

}  // namespace engine
