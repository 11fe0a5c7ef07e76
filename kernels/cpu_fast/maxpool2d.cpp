#include "kernels/cpu_fast/maxpool2d.h"

#include <algorithm>
#include <atomic>
#include <limits>

#include "core/error.h"
#include "kernels/cpu_fast/parallel.h"

namespace engine::cpu_fast {

void maxpool2d_forward(const Pool2dShape& s, const float* x, float* y, std::int32_t* argmax) {
  s.validate();
  const int p = s.p(), q = s.q();
  const std::int64_t planes = static_cast<std::int64_t>(s.n) * s.c;
  const std::int64_t plane_in = static_cast<std::int64_t>(s.h) * s.w;
#pragma omp parallel for if (planes * plane_in >= kParallelMinElements) schedule(static)
  for (std::int64_t plane = 0; plane < planes; ++plane) {
    const float* xp = x + plane * plane_in;
    float* yp = y + plane * p * q;
    std::int32_t* ap = argmax + plane * p * q;
    for (int op = 0; op < p; ++op) {
      // The window clipped to the real input; the clipped-away cells are padding (-inf), never a max.
      const int h0 = std::max(op * s.stride_h - s.pad_h, 0);
      const int h1 = std::min(op * s.stride_h - s.pad_h + s.kernel_h, s.h);
      for (int oq = 0; oq < q; ++oq) {
        const int w0 = std::max(oq * s.stride_w - s.pad_w, 0);
        const int w1 = std::min(oq * s.stride_w - s.pad_w + s.kernel_w, s.w);
        float best = -std::numeric_limits<float>::infinity();
        std::int32_t best_index = h0 * s.w + w0;
        for (int ih = h0; ih < h1; ++ih) {
          for (int iw = w0; iw < w1; ++iw) {
            const float v = xp[ih * s.w + iw];
            if (v > best || v != v) {  // strict '>': the first maximum wins a tie; NaN wins
              best = v;
              best_index = ih * s.w + iw;
            }
          }
        }
        yp[op * q + oq] = best;
        ap[op * q + oq] = best_index;
      }
    }
  }
}

void maxpool2d_backward(const Pool2dShape& s, const float* dy, const std::int32_t* argmax, float* dx) {
  s.validate();
  const std::int64_t plane_in = static_cast<std::int64_t>(s.h) * s.w;
  const std::int64_t plane_out = static_cast<std::int64_t>(s.p()) * s.q();
  const std::int64_t planes = static_cast<std::int64_t>(s.n) * s.c;
  std::atomic<std::int64_t> bad{-1};  // the first out-of-plane argmax seen, reported after the loop
#pragma omp parallel for if (planes * plane_in >= kParallelMinElements) schedule(static)
  for (std::int64_t plane = 0; plane < planes; ++plane) {
    float* dxp = dx + plane * plane_in;
    std::fill(dxp, dxp + plane_in, 0.0f);
    for (std::int64_t o = plane * plane_out; o < (plane + 1) * plane_out; ++o) {
      const std::int32_t i = argmax[o];
      if (i < 0 || i >= plane_in) {
        std::int64_t none = -1;
        bad.compare_exchange_strong(none, o);
        continue;
      }
      dxp[i] += dy[o];
    }
  }
  const std::int64_t o = bad.load();
  ENGINE_CHECK(o < 0, "maxpool2d_backward: argmax[{}] = {} is outside the plane of {} cells", o, argmax[o],
               plane_in);
}

}  // namespace engine::cpu_fast
