#include "kernels/cpu_fast/channel_layernorm.h"

#include <vector>

#include "core/error.h"
#include "kernels/channel_layernorm_math.h"
#include "kernels/cpu_fast/parallel.h"

namespace engine::cpu_fast {

void channel_layernorm_forward(const ChannelAffineShape& s, double eps, const float* x, const float* gamma,
                               const float* beta, float* y) {
  s.validate();
  ENGINE_CHECK(x != nullptr && y != nullptr, "channel_layernorm_forward: null x or y");
  const std::int64_t pixels = s.outer * s.inner;
#pragma omp parallel for if (s.numel() >= kParallelMinElements) schedule(static)
  for (std::int64_t p = 0; p < pixels; ++p) {
    const std::int64_t base = (p / s.inner) * s.channels * s.inner + p % s.inner;
    pixel_layernorm_forward(x + base, gamma, beta, y + base, s.channels, s.inner, eps);
  }
}

void channel_layernorm_backward(const ChannelAffineShape& s, double eps, const float* x, const float* gamma,
                                const float* dy, float* dx, float* dgamma, float* dbeta) {
  s.validate();
  ENGINE_CHECK(x != nullptr && dy != nullptr, "channel_layernorm_backward: null x or dy");
  const std::int64_t pixels = s.outer * s.inner;
  std::vector<PixelMoments> moments(static_cast<std::size_t>(pixels));
  auto base_of = [&](std::int64_t p) { return (p / s.inner) * s.channels * s.inner + p % s.inner; };
#pragma omp parallel for if (s.numel() >= kParallelMinElements) schedule(static)
  for (std::int64_t p = 0; p < pixels; ++p) {
    const std::int64_t base = base_of(p);
    moments[static_cast<std::size_t>(p)] = pixel_layernorm_backward(
        x + base, gamma, dy + base, dx != nullptr ? dx + base : nullptr, s.channels, s.inner, eps);
  }
  if (dgamma == nullptr && dbeta == nullptr) return;
    // One thread per channel: each channel's sums run over the pixels in the reference's order.
#pragma omp parallel for if (s.numel() >= kParallelMinElements) schedule(static)
  for (std::int64_t c = 0; c < s.channels; ++c) {
    double sum_dyx = 0.0, sum_dy = 0.0;
    for (std::int64_t p = 0; p < pixels; ++p) {
      const std::int64_t k = base_of(p) + c * s.inner;
      const PixelMoments& m = moments[static_cast<std::size_t>(p)];
      const double d = static_cast<double>(dy[k]);
      sum_dyx += d * (static_cast<double>(x[k]) - m.mean) * m.rstd;
      sum_dy += d;
    }
    if (dgamma != nullptr) dgamma[c] = static_cast<float>(sum_dyx);
    if (dbeta != nullptr) dbeta[c] = static_cast<float>(sum_dy);
  }
}

}  // namespace engine::cpu_fast
