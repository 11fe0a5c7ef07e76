#pragma once
// The inputs of the elementwise kernel tests (GELU, the activations; CPU fast path and CUDA): n floats
// uniform in [-8, 8) from a fixed seed, wide enough to reach every function's tails and kinks.

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace engine::testing {

inline std::vector<float> elementwise_inputs(std::size_t n, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-8.0f, 8.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

}  // namespace engine::testing
