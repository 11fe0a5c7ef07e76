#include "kernels/cpu/avgpool2d.h"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace engine::cpu {

template <typename T>
void avgpool2d_forward(const AvgPool2dShape& s, const T* x, T* y) {
  s.validate();
  const Pool2dShape& g = s.window;
  const int p = s.p(), q = s.q();
  const std::int64_t planes = static_cast<std::int64_t>(g.n) * g.c;
  for (std::int64_t plane = 0; plane < planes; ++plane) {
    const T* xp = x + plane * g.h * g.w;
    for (int op = 0; op < p; ++op) {
      // The window clipped to the real input: padding adds zeros.
      const auto [h0, h1] = g.rows(op);
      for (int oq = 0; oq < q; ++oq) {
        const auto [w0, w1] = g.cols(oq);
        double sum = 0.0;
        for (int ih = h0; ih < h1; ++ih) {
          for (int iw = w0; iw < w1; ++iw) sum += static_cast<double>(xp[ih * g.w + iw]);
        }
        y[(plane * p + op) * q + oq] = static_cast<T>(sum / static_cast<double>(s.divisor(op, oq)));
      }
    }
  }
}

template <typename T>
void avgpool2d_backward(const AvgPool2dShape& s, const T* dy, T* dx) {
  s.validate();
  const Pool2dShape& g = s.window;
  const int p = s.p(), q = s.q();
  const std::int64_t plane_size = static_cast<std::int64_t>(g.h) * g.w;
  const std::int64_t planes = static_cast<std::int64_t>(g.n) * g.c;
  std::vector<double> acc(static_cast<std::size_t>(plane_size));
  for (std::int64_t plane = 0; plane < planes; ++plane) {
    std::fill(acc.begin(), acc.end(), 0.0);
    for (int op = 0; op < p; ++op) {
      const auto [h0, h1] = g.rows(op);
      for (int oq = 0; oq < q; ++oq) {
        const auto [w0, w1] = g.cols(oq);
        const double share =
            static_cast<double>(dy[(plane * p + op) * q + oq]) / static_cast<double>(s.divisor(op, oq));
        for (int ih = h0; ih < h1; ++ih) {
          for (int iw = w0; iw < w1; ++iw) acc[static_cast<std::size_t>(ih * g.w + iw)] += share;
        }
      }
    }
    for (std::int64_t i = 0; i < plane_size; ++i) dx[plane * plane_size + i] = static_cast<T>(acc[i]);
  }
}

template void avgpool2d_forward<float>(const AvgPool2dShape&, const float*, float*);
template void avgpool2d_forward<double>(const AvgPool2dShape&, const double*, double*);
template void avgpool2d_backward<float>(const AvgPool2dShape&, const float*, float*);
template void avgpool2d_backward<double>(const AvgPool2dShape&, const double*, double*);

}  // namespace engine::cpu
