#include "kernels/cpu_fast/channel_affine.h"

#include "core/error.h"
#include "kernels/cpu_fast/parallel.h"

namespace engine::cpu_fast {

void channel_affine_forward(const ChannelAffineShape& s, const float* x, const float* scale,
                            const float* shift, float* y) {
  s.validate();
  ENGINE_CHECK(x != nullptr && y != nullptr, "channel_affine_forward: null x or y");
  const std::int64_t rows = s.outer * s.channels;
#pragma omp parallel for if (s.numel() >= kParallelMinElements) schedule(static)
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::int64_t c = r % s.channels;
    const double a = scale != nullptr ? static_cast<double>(scale[c]) : 1.0;
    const double b = shift != nullptr ? static_cast<double>(shift[c]) : 0.0;
    const float* xr = x + r * s.inner;
    float* yr = y + r * s.inner;
#pragma omp simd
    for (std::int64_t i = 0; i < s.inner; ++i) yr[i] = static_cast<float>(static_cast<double>(xr[i]) * a + b);
  }
}

void channel_affine_backward(const ChannelAffineShape& s, const float* x, const float* scale, const float* dy,
                             float* dx, float* dscale, float* dshift) {
  s.validate();
  ENGINE_CHECK(dy != nullptr, "channel_affine_backward: null dy");
  ENGINE_CHECK(dscale == nullptr || x != nullptr, "channel_affine_backward: the scale's gradient needs x");
  // One thread per channel: each channel's sums run over its cells in the reference's order.
#pragma omp parallel for if (s.numel() >= kParallelMinElements) schedule(static)
  for (std::int64_t c = 0; c < s.channels; ++c) {
    const double a = scale != nullptr ? static_cast<double>(scale[c]) : 1.0;
    double sum_dyx = 0.0, sum_dy = 0.0;
    for (std::int64_t o = 0; o < s.outer; ++o) {
      const std::int64_t base = (o * s.channels + c) * s.inner;
      for (std::int64_t i = 0; i < s.inner; ++i) {
        const double g = static_cast<double>(dy[base + i]);
        if (dx != nullptr) dx[base + i] = static_cast<float>(g * a);
        if (dscale != nullptr) sum_dyx += g * static_cast<double>(x[base + i]);
        sum_dy += g;
      }
    }
    if (dscale != nullptr) dscale[c] = static_cast<float>(sum_dyx);
    if (dshift != nullptr) dshift[c] = static_cast<float>(sum_dy);
  }
}

}  // namespace engine::cpu_fast
