#include "layers/init.h"

#include <cmath>

#include "core/philox.h"

namespace engine::layers {

std::vector<double> initial_values(const ParamSlot& slot, std::uint64_t seed, std::size_t param_index) {
  const auto n = static_cast<std::size_t>(shape_numel(slot.shape));
  std::vector<double> v(n);
  switch (slot.init) {
    case ParamInit::Ones:
      for (double& x : v) x = 1.0;
      break;
    case ParamInit::Zeros:
      for (double& x : v) x = 0.0;
      break;
    case ParamInit::FanInUniform: {
      ENGINE_CHECK(slot.fan_in > 0, "parameter '{}': fan-in initialization without a fan-in", slot.name);
      const double bound = 1.0 / std::sqrt(static_cast<double>(slot.fan_in));
      const std::uint64_t offset = kInitOffsetBase + param_index;
      for (std::size_t i = 0; i < n; ++i) {
        const PhiloxBlock b = philox_block(seed, offset, i);
        const std::uint64_t bits = ((static_cast<std::uint64_t>(b.v[0]) << 32) | b.v[1]) >> 11;
        const double u = static_cast<double>(bits) * 0x1.0p-53;
        v[i] = bound * (2.0 * u - 1.0);
      }
      break;
    }
  }
  return v;
}

}  // namespace engine::layers
