#include "kernels/cpu/channel_layernorm.h"

#include <cmath>
#include <utility>
#include <vector>

#include "core/error.h"

namespace engine::cpu {

namespace {

void check(const ChannelAffineShape& s, double eps, const char* op) {
  s.validate();
  ENGINE_CHECK(eps > 0.0 && std::isfinite(eps), "{}: epsilon {} is not a positive number", op, eps);
}

// The pixel's mean and 1 / sqrt(biased variance + eps), two passes in double.
template <typename T>
std::pair<double, double> moments(const ChannelAffineShape& s, double eps, const T* x) {
  double sum = 0.0;
  for (std::int64_t c = 0; c < s.channels; ++c) sum += static_cast<double>(x[c * s.inner]);
  const double mean = sum / static_cast<double>(s.channels);
  double var = 0.0;
  for (std::int64_t c = 0; c < s.channels; ++c) {
    const double d = static_cast<double>(x[c * s.inner]) - mean;
    var += d * d;
  }
  return {mean, 1.0 / std::sqrt(var / static_cast<double>(s.channels) + eps)};
}

}  // namespace

template <typename T>
void channel_layernorm_forward(const ChannelAffineShape& s, double eps, const T* x, const T* gamma,
                               const T* beta, T* y) {
  check(s, eps, "channel_layernorm_forward");
  ENGINE_CHECK(x != nullptr && y != nullptr, "channel_layernorm_forward: null x or y");
  for (std::int64_t o = 0; o < s.outer; ++o) {
    for (std::int64_t i = 0; i < s.inner; ++i) {
      const std::int64_t base = o * s.channels * s.inner + i;
      const auto [mean, rstd] = moments(s, eps, x + base);
      for (std::int64_t c = 0; c < s.channels; ++c) {
        const double g = gamma != nullptr ? static_cast<double>(gamma[c]) : 1.0;
        const double b = beta != nullptr ? static_cast<double>(beta[c]) : 0.0;
        const std::int64_t k = base + c * s.inner;
        y[k] = static_cast<T>((static_cast<double>(x[k]) - mean) * rstd * g + b);
      }
    }
  }
}

template <typename T>
void channel_layernorm_backward(const ChannelAffineShape& s, double eps, const T* x, const T* gamma,
                                const T* dy, T* dx, T* dgamma, T* dbeta) {
  check(s, eps, "channel_layernorm_backward");
  ENGINE_CHECK(x != nullptr && dy != nullptr, "channel_layernorm_backward: null x or dy");
  const auto channels = static_cast<std::size_t>(s.channels);
  std::vector<double> sum_dyx(channels, 0.0), sum_dy(channels, 0.0), xhat(channels), g(channels);
  const double n = static_cast<double>(s.channels);
  for (std::int64_t o = 0; o < s.outer; ++o) {
    for (std::int64_t i = 0; i < s.inner; ++i) {
      const std::int64_t base = o * s.channels * s.inner + i;
      const auto [mean, rstd] = moments(s, eps, x + base);
      double mean_g = 0.0, mean_gx = 0.0;
      for (std::size_t c = 0; c < channels; ++c) {
        const std::int64_t k = base + static_cast<std::int64_t>(c) * s.inner;
        const double d = static_cast<double>(dy[k]);
        xhat[c] = (static_cast<double>(x[k]) - mean) * rstd;
        g[c] = d * (gamma != nullptr ? static_cast<double>(gamma[c]) : 1.0);
        mean_g += g[c] / n;
        mean_gx += g[c] * xhat[c] / n;
        sum_dyx[c] += d * xhat[c];
        sum_dy[c] += d;
      }
      if (dx == nullptr) continue;
      for (std::size_t c = 0; c < channels; ++c) {
        dx[base + static_cast<std::int64_t>(c) * s.inner] =
            static_cast<T>(rstd * (g[c] - mean_g - xhat[c] * mean_gx));
      }
    }
  }
  for (std::size_t c = 0; c < channels; ++c) {
    if (dgamma != nullptr) dgamma[c] = static_cast<T>(sum_dyx[c]);
    if (dbeta != nullptr) dbeta[c] = static_cast<T>(sum_dy[c]);
  }
}

template void channel_layernorm_forward<float>(const ChannelAffineShape&, double, const float*, const float*,
                                               const float*, float*);
template void channel_layernorm_forward<double>(const ChannelAffineShape&, double, const double*,
                                                const double*, const double*, double*);
template void channel_layernorm_backward<float>(const ChannelAffineShape&, double, const float*, const float*,
                                                const float*, float*, float*, float*);
template void channel_layernorm_backward<double>(const ChannelAffineShape&, double, const double*,
                                                 const double*, const double*, double*, double*, double*);

}  // namespace engine::cpu
