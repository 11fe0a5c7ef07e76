#include "kernels/cpu/channel_affine.h"

#include <vector>

#include "core/error.h"

namespace engine::cpu {

template <typename T>
void channel_affine_forward(const ChannelAffineShape& s, const T* x, const T* scale, const T* shift, T* y) {
  s.validate();
  ENGINE_CHECK(x != nullptr && y != nullptr, "channel_affine_forward: null x or y");
  for (std::int64_t o = 0; o < s.outer; ++o) {
    for (std::int64_t c = 0; c < s.channels; ++c) {
      const double a = scale != nullptr ? static_cast<double>(scale[c]) : 1.0;
      const double b = shift != nullptr ? static_cast<double>(shift[c]) : 0.0;
      const std::int64_t base = (o * s.channels + c) * s.inner;
      for (std::int64_t i = 0; i < s.inner; ++i)
        y[base + i] = static_cast<T>(static_cast<double>(x[base + i]) * a + b);
    }
  }
}

template <typename T>
void channel_affine_backward(const ChannelAffineShape& s, const T* x, const T* scale, const T* dy, T* dx,
                             T* dscale, T* dshift) {
  s.validate();
  ENGINE_CHECK(dy != nullptr, "channel_affine_backward: null dy");
  ENGINE_CHECK(dscale == nullptr || x != nullptr, "channel_affine_backward: the scale's gradient needs x");
  std::vector<double> a(static_cast<std::size_t>(s.channels), 1.0);
  if (scale != nullptr) {
    for (std::int64_t c = 0; c < s.channels; ++c)
      a[static_cast<std::size_t>(c)] = static_cast<double>(scale[c]);
  }
  std::vector<double> sum_dyx(a.size(), 0.0), sum_dy(a.size(), 0.0);
  for (std::int64_t o = 0; o < s.outer; ++o) {
    for (std::int64_t c = 0; c < s.channels; ++c) {
      const auto k = static_cast<std::size_t>(c);
      const std::int64_t base = (o * s.channels + c) * s.inner;
      for (std::int64_t i = 0; i < s.inner; ++i) {
        const double g = static_cast<double>(dy[base + i]);
        if (dx != nullptr) dx[base + i] = static_cast<T>(g * a[k]);
        if (dscale != nullptr) sum_dyx[k] += g * static_cast<double>(x[base + i]);
        sum_dy[k] += g;
      }
    }
  }
  for (std::int64_t c = 0; c < s.channels; ++c) {
    if (dscale != nullptr) dscale[c] = static_cast<T>(sum_dyx[static_cast<std::size_t>(c)]);
    if (dshift != nullptr) dshift[c] = static_cast<T>(sum_dy[static_cast<std::size_t>(c)]);
  }
}

template void channel_affine_forward<float>(const ChannelAffineShape&, const float*, const float*,
                                            const float*, float*);
template void channel_affine_forward<double>(const ChannelAffineShape&, const double*, const double*,
                                             const double*, double*);
template void channel_affine_backward<float>(const ChannelAffineShape&, const float*, const float*,
                                             const float*, float*, float*, float*);
template void channel_affine_backward<double>(const ChannelAffineShape&, const double*, const double*,
                                              const double*, double*, double*, double*);

}  // namespace engine::cpu
