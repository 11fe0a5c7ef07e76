#pragma once
// Parameter initialization, PyTorch's defaults drawn from Philox so that every rank, device and run that uses
// the same seed builds bit-identical weights, with no generator state to pass around.
//
// Element i of the parameter with index k (its position in Model::parameters()) is drawn from
//   u = 53 random bits of philox_block(seed, kInitOffsetBase + k, i) / 2^53        in [0, 1)
// and mapped to U(-bound, bound), bound = 1/sqrt(fan_in), in double, then rounded once to the model's dtype.
// The offsets live far above the ones dropout uses, so a model seed equal to the dropout seed is harmless.

#include <cstdint>
#include <vector>

#include "layers/layer.h"

namespace engine::layers {

inline constexpr std::uint64_t kInitOffsetBase = 0x1417'0000'0000'0000ull;

// The initial values of one parameter, in double.
std::vector<double> initial_values(const ParamSlot& slot, std::uint64_t seed, std::size_t param_index);

}  // namespace engine::layers
