#include "kernels/cpu_fast/avgpool2d.h"

#include <algorithm>
#include <cstdint>

#include "kernels/cpu_fast/parallel.h"

namespace engine::cpu_fast {

namespace {

// The first output index o whose window (o * stride - pad, + kernel) reaches cell i.
int first_window(int i, int stride, int pad, int kernel) {
  const int t = i + pad - kernel + 1;  // need o * stride >= t
  return t <= 0 ? 0 : (t + stride - 1) / stride;
}

}  // namespace

void avgpool2d_forward(const AvgPool2dShape& s, const float* x, float* y) {
  s.validate();
  const Pool2dShape& g = s.window;
  const int p = s.p(), q = s.q();
  const std::int64_t planes = static_cast<std::int64_t>(g.n) * g.c;
  const std::int64_t plane_in = static_cast<std::int64_t>(g.h) * g.w;
#pragma omp parallel for if (planes * plane_in >= kParallelMinElements) schedule(static)
  for (std::int64_t plane = 0; plane < planes; ++plane) {
    const float* xp = x + plane * plane_in;
    float* yp = y + plane * p * q;
    for (int op = 0; op < p; ++op) {
      const auto [h0, h1] = g.rows(op);
      for (int oq = 0; oq < q; ++oq) {
        const auto [w0, w1] = g.cols(oq);
        double sum = 0.0;
        for (int ih = h0; ih < h1; ++ih) {
          for (int iw = w0; iw < w1; ++iw) sum += static_cast<double>(xp[ih * g.w + iw]);
        }
        yp[op * q + oq] = static_cast<float>(sum / static_cast<double>(s.divisor(op, oq)));
      }
    }
  }
}

void avgpool2d_backward(const AvgPool2dShape& s, const float* dy, float* dx) {
  s.validate();
  const Pool2dShape& g = s.window;
  const int p = s.p(), q = s.q();
  const std::int64_t planes = static_cast<std::int64_t>(g.n) * g.c;
  const std::int64_t plane_in = static_cast<std::int64_t>(g.h) * g.w;
#pragma omp parallel for if (planes * plane_in >= kParallelMinElements) schedule(static)
  for (std::int64_t plane = 0; plane < planes; ++plane) {
    const float* dyp = dy + plane * p * q;
    float* dxp = dx + plane * plane_in;
    for (int ih = 0; ih < g.h; ++ih) {
      // The windows holding row ih, in increasing order (the reference's scatter order), clipped to [0, p).
      const int op0 = first_window(ih, g.stride_h, g.pad_h, g.kernel_h);
      const int op1 = std::min((ih + g.pad_h) / g.stride_h, p - 1);
      for (int iw = 0; iw < g.w; ++iw) {
        const int oq0 = first_window(iw, g.stride_w, g.pad_w, g.kernel_w);
        const int oq1 = std::min((iw + g.pad_w) / g.stride_w, q - 1);
        double acc = 0.0;
        for (int op = op0; op <= op1; ++op) {
          for (int oq = oq0; oq <= oq1; ++oq) {
            acc += static_cast<double>(dyp[op * q + oq]) / static_cast<double>(s.divisor(op, oq));
          }
        }
        dxp[ih * g.w + iw] = static_cast<float>(acc);
      }
    }
  }
}

}  // namespace engine::cpu_fast
