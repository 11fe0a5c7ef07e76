#include "layers/init.h"

#include <algorithm>
#include <cmath>

#include "core/philox.h"

namespace engine::layers {

namespace {

// dirac_ on weight[:min(out, in)] of a [out, in, kh, kw] weight: those filters pass channel i through at the
// kernel's centre (index k/2, PyTorch's), every other tap 0.
void set_dirac(const ParamSlot& slot, std::vector<double>& v) {
  ENGINE_CHECK(slot.shape.size() == 4, "parameter '{}': dirac initialization needs a conv weight, got {}",
               slot.name, shape_str(slot.shape));
  const std::int64_t out = slot.shape[0], in = slot.shape[1], kh = slot.shape[2], kw = slot.shape[3];
  for (std::int64_t o = 0; o < std::min(out, in); ++o) {
    for (std::int64_t c = 0; c < in; ++c) {
      for (std::int64_t r = 0; r < kh; ++r) {
        for (std::int64_t s = 0; s < kw; ++s) {
          const bool centre = c == o && r == kh / 2 && s == kw / 2;
          v[static_cast<std::size_t>(((o * in + c) * kh + r) * kw + s)] = centre ? 1.0 : 0.0;
        }
      }
    }
  }
}

}  // namespace

std::vector<double> initial_values(const ParamSlot& slot, std::uint64_t seed, std::size_t param_index) {
  if (!slot.given.empty()) return slot.given;  // a model file's value (Layer::set_initial_values)
  const auto n = static_cast<std::size_t>(shape_numel(slot.shape));
  std::vector<double> v(n);
  switch (slot.init) {
    case ParamInit::Ones:
      for (double& x : v) x = 1.0;
      break;
    case ParamInit::Zeros:
      for (double& x : v) x = 0.0;
      break;
    case ParamInit::FanInUniform:
    case ParamInit::FanInUniformDirac: {
      ENGINE_CHECK(slot.fan_in > 0, "parameter '{}': fan-in initialization without a fan-in", slot.name);
      const double bound = 1.0 / std::sqrt(static_cast<double>(slot.fan_in));
      const std::uint64_t offset = kInitOffsetBase + param_index;
      for (std::size_t i = 0; i < n; ++i) {
        const PhiloxBlock b = philox_block(seed, offset, i);
        const std::uint64_t bits = ((static_cast<std::uint64_t>(b.v[0]) << 32) | b.v[1]) >> 11;
        const double u = static_cast<double>(bits) * 0x1.0p-53;
        v[i] = bound * (2.0 * u - 1.0);
      }
      if (slot.init == ParamInit::FanInUniformDirac) set_dirac(slot, v);
      break;
    }
  }
  return v;
}

}  // namespace engine::layers
