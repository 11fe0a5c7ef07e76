#include "kernels/cpu/maxpool2d.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/error.h"

namespace engine::cpu {

template <typename T>
void maxpool2d_forward(const Pool2dShape& s, const T* x, T* y, std::int32_t* argmax) {
  s.validate();
  const int p = s.p(), q = s.q();
  const std::int64_t planes = static_cast<std::int64_t>(s.n) * s.c;
  for (std::int64_t plane = 0; plane < planes; ++plane) {
    const T* xp = x + plane * s.h * s.w;
    for (int op = 0; op < p; ++op) {
      // The window clipped to the real input; the clipped-away cells are padding (-inf), never a max.
      const auto [h0, h1] = s.rows(op);
      for (int oq = 0; oq < q; ++oq) {
        const auto [w0, w1] = s.cols(oq);
        T best = -std::numeric_limits<T>::infinity();
        std::int32_t best_index = h0 * s.w + w0;
        for (int ih = h0; ih < h1; ++ih) {
          for (int iw = w0; iw < w1; ++iw) {
            const T v = xp[ih * s.w + iw];
            if (v > best || std::isnan(v)) {  // strict '>': the first maximum in scan order wins a tie
              best = v;
              best_index = ih * s.w + iw;
            }
          }
        }
        const std::int64_t o = (plane * p + op) * q + oq;
        y[o] = best;
        argmax[o] = best_index;
      }
    }
  }
}

template <typename T>
void maxpool2d_backward(const Pool2dShape& s, const T* dy, const std::int32_t* argmax, T* dx) {
  s.validate();
  const std::int64_t plane_size = static_cast<std::int64_t>(s.h) * s.w;
  const std::int64_t out_plane = static_cast<std::int64_t>(s.p()) * s.q();
  const std::int64_t planes = static_cast<std::int64_t>(s.n) * s.c;
  std::vector<double> acc(static_cast<std::size_t>(plane_size));
  for (std::int64_t plane = 0; plane < planes; ++plane) {
    std::fill(acc.begin(), acc.end(), 0.0);
    for (std::int64_t o = plane * out_plane; o < (plane + 1) * out_plane; ++o) {
      const std::int32_t i = argmax[o];
      ENGINE_CHECK(i >= 0 && i < plane_size,
                   "maxpool2d_backward: argmax[{}] = {} is outside the plane of {} cells", o, i, plane_size);
      acc[static_cast<std::size_t>(i)] += static_cast<double>(dy[o]);
    }
    for (std::int64_t i = 0; i < plane_size; ++i) dx[plane * plane_size + i] = static_cast<T>(acc[i]);
  }
}

template void maxpool2d_forward<float>(const Pool2dShape&, const float*, float*, std::int32_t*);
template void maxpool2d_forward<double>(const Pool2dShape&, const double*, double*, std::int32_t*);
template void maxpool2d_backward<float>(const Pool2dShape&, const float*, const std::int32_t*, float*);
template void maxpool2d_backward<double>(const Pool2dShape&, const double*, const std::int32_t*, double*);

}  // namespace engine::cpu
