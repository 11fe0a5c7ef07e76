#pragma once
// Layer normalization over the channels of one pixel (convnext's LayerNorm2d: PyTorch's nn.LayerNorm over
// the last axis of an NHWC view), written once for the CPU loop (kernels/cpu_fast) and the CUDA threads
// (kernels/cuda): the pixel's C values sit `stride` elements apart (NCHW: H*W; NHWC: 1). Sums in double,
// two passes (mean, then the biased variance), each output rounded once to float:
//   y[c]  = (x[c] - mean) * rstd * gamma[c] + beta[c],   rstd = 1 / sqrt(var + eps)
//   dx[c] = rstd * (g[c] - mean(g) - xhat[c] * mean(g * xhat)),   g = dy * gamma,  xhat = (x - mean) * rstd
//           (the two means divided once per pixel)
// kernels/cpu/channel_layernorm.h is the float64 reference the tests compare both with. The CUDA threads run
// a pixel each (pixel_layernorm_*); the CPU runs NCHW's pixels in blocks along the contiguous H*W axis with
// the same sums in the same order and the same per-element formulas (layernorm_output, layernorm_input_grad).

#include <cmath>
#include <cstdint>

#include "core/host_device.h"

namespace engine {

struct PixelMoments {
  double mean = 0.0, rstd = 0.0;
};

ENGINE_HOST_DEVICE PixelMoments pixel_moments(const float* x, std::int64_t channels, std::int64_t stride,
                                              double eps) {
  double sum = 0.0;
  for (std::int64_t c = 0; c < channels; ++c) sum += static_cast<double>(x[c * stride]);
  const double mean = sum / static_cast<double>(channels);
  double var = 0.0;
  for (std::int64_t c = 0; c < channels; ++c) {
    const double d = static_cast<double>(x[c * stride]) - mean;
    var += d * d;
  }
  var /= static_cast<double>(channels);
  return {mean, 1.0 / sqrt(var + eps)};
}

// One element's output, and its input gradient from its pixel's sums of g and g * xhat over n channels.
ENGINE_HOST_DEVICE float layernorm_output(double x, const PixelMoments& m, double gamma, double beta) {
  return static_cast<float>((x - m.mean) * m.rstd * gamma + beta);
}

// mean_g = sum g / n and mean_gx = sum g xhat / n are the pixel's, divided once per pixel (not per element).
ENGINE_HOST_DEVICE float layernorm_input_grad(double g, double xhat, const PixelMoments& m, double mean_g,
                                              double mean_gx) {
  return static_cast<float>(m.rstd * (g - mean_g - xhat * mean_gx));
}

// y of one pixel; gamma or beta null: 1 or 0.
ENGINE_HOST_DEVICE void pixel_layernorm_forward(const float* x, const float* gamma, const float* beta,
                                                float* y, std::int64_t channels, std::int64_t stride,
                                                double eps) {
  const PixelMoments m = pixel_moments(x, channels, stride, eps);
  for (std::int64_t c = 0; c < channels; ++c) {
    const double g = gamma != nullptr ? static_cast<double>(gamma[c]) : 1.0;
    const double b = beta != nullptr ? static_cast<double>(beta[c]) : 0.0;
    y[c * stride] = layernorm_output(static_cast<double>(x[c * stride]), m, g, b);
  }
}

// dx of one pixel (overwritten); returns the pixel's moments for the parameter gradients.
ENGINE_HOST_DEVICE PixelMoments pixel_layernorm_backward(const float* x, const float* gamma, const float* dy,
                                                         float* dx, std::int64_t channels,
                                                         std::int64_t stride, double eps) {
  const PixelMoments m = pixel_moments(x, channels, stride, eps);
  if (dx == nullptr) return m;
  double sum_g = 0.0, sum_gx = 0.0;
  for (std::int64_t c = 0; c < channels; ++c) {
    const double g =
        static_cast<double>(dy[c * stride]) * (gamma != nullptr ? static_cast<double>(gamma[c]) : 1.0);
    sum_g += g;
    sum_gx += g * (static_cast<double>(x[c * stride]) - m.mean) * m.rstd;
  }
  const double n = static_cast<double>(channels), mean_g = sum_g / n, mean_gx = sum_gx / n;
  for (std::int64_t c = 0; c < channels; ++c) {
    const double g =
        static_cast<double>(dy[c * stride]) * (gamma != nullptr ? static_cast<double>(gamma[c]) : 1.0);
    const double xhat = (static_cast<double>(x[c * stride]) - m.mean) * m.rstd;
    dx[c * stride] = layernorm_input_grad(g, xhat, m, mean_g, mean_gx);
  }
  return m;
}

}  // namespace engine
