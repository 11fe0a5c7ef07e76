#include "kernels/cpu_fast/batchnorm2d.h"

#include <cmath>
#include <cstdint>

#include "core/error.h"
#include "kernels/cpu_fast/parallel.h"

namespace engine::cpu_fast {
namespace {

using std::int64_t;

// Sum of n floats in double: four independent accumulators, so the loop vectorises without reassociating
// anything the reference would not (it is still a double sum of the same values, to double rounding).
double sum(const float* v, int64_t n) {
  double acc = 0.0;
#pragma omp simd reduction(+ : acc)
  for (int64_t i = 0; i < n; ++i) acc += static_cast<double>(v[i]);
  return acc;
}

double sum_sq_dev(const float* v, int64_t n, double mean) {
  double acc = 0.0;
#pragma omp simd reduction(+ : acc)
  for (int64_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(v[i]) - mean;
    acc += d * d;
  }
  return acc;
}

}  // namespace

void batchnorm2d_forward_training(const BatchNorm2dShape& g, const float* x, const float* gamma,
                                  const float* beta, float* y, float* save_mean, float* save_invstd,
                                  float* running_mean, float* running_var, double momentum, double eps) {
  g.validate();
  ENGINE_CHECK(eps >= 0.0, "batchnorm2d: eps must not be negative, got {}", eps);
  ENGINE_CHECK(momentum >= 0.0 && momentum <= 1.0, "batchnorm2d: momentum must lie in [0, 1], got {}",
               momentum);
  ENGINE_CHECK(
      g.count() >= 2,
      "batchnorm2d: expected more than 1 value per channel when training, got input [{}, {}, {}, {}] "
      "({} per channel)",
      g.n, g.c, g.h, g.w, g.count());
  ENGINE_CHECK(x != nullptr && y != nullptr && save_mean != nullptr && save_invstd != nullptr,
               "batchnorm2d_forward_training: x, y, save_mean and save_invstd must not be null");
  ENGINE_CHECK(
      (running_mean == nullptr) == (running_var == nullptr),
      "batchnorm2d_forward_training: running_mean and running_var must both be given or both be null");
  const int64_t hw = static_cast<int64_t>(g.h) * g.w;
  const int64_t channel_stride = hw * g.c;
  const double m = static_cast<double>(g.count());
#pragma omp parallel for if (static_cast <int64_t>(g.x_size()) >= kParallelMinElements) schedule(static)
  for (int c = 0; c < g.c; ++c) {
    const float* xc = x + c * hw;
    double total = 0.0;
    for (int n = 0; n < g.n; ++n) total += sum(xc + n * channel_stride, hw);
    const double mean = total / m;
    double sq = 0.0;
    for (int n = 0; n < g.n; ++n) sq += sum_sq_dev(xc + n * channel_stride, hw, mean);
    const double invstd = 1.0 / std::sqrt(sq / m + eps);
    const double scale = (gamma != nullptr ? static_cast<double>(gamma[c]) : 1.0) * invstd;
    // Elementwise in double, as the reference: BatchNorm divides by the spread, and when the spread is tiny
    // against the mean, (x - mean) rounded to float would be amplified by invstd.
    const double shift = beta != nullptr ? static_cast<double>(beta[c]) : 0.0;
    for (int n = 0; n < g.n; ++n) {
      const float* xp = xc + n * channel_stride;
      float* yp = y + c * hw + n * channel_stride;
#pragma omp simd
      for (int64_t i = 0; i < hw; ++i)
        yp[i] = static_cast<float>((static_cast<double>(xp[i]) - mean) * scale + shift);
    }
    save_mean[c] = static_cast<float>(mean);
    save_invstd[c] = static_cast<float>(invstd);
    if (running_mean != nullptr) {
      running_mean[c] =
          static_cast<float>((1.0 - momentum) * static_cast<double>(running_mean[c]) + momentum * mean);
      running_var[c] = static_cast<float>((1.0 - momentum) * static_cast<double>(running_var[c]) +
                                          momentum * sq / (m - 1.0));
    }
  }
}

void batchnorm2d_backward_training(const BatchNorm2dShape& g, const float* x, const float* gamma,
                                   const float* save_mean, const float* save_invstd, const float* dy,
                                   float* dx, float* dgamma, float* dbeta) {
  g.validate();
  ENGINE_CHECK(x != nullptr && dy != nullptr && save_mean != nullptr && save_invstd != nullptr,
               "batchnorm2d_backward_training: x, dy, save_mean and save_invstd must not be null");
  const int64_t hw = static_cast<int64_t>(g.h) * g.w;
  const int64_t channel_stride = hw * g.c;
  const double m = static_cast<double>(g.count());
#pragma omp parallel for if (static_cast <int64_t>(g.x_size()) >= kParallelMinElements) schedule(static)
  for (int c = 0; c < g.c; ++c) {
    const double mean = static_cast<double>(save_mean[c]);
    const double invstd = static_cast<double>(save_invstd[c]);
    // sum dy and sum dy * (x - mean); xhat = (x - mean) * invstd is applied once, to the sum.
    double sum_dy = 0.0, sum_dy_xc = 0.0;
    for (int n = 0; n < g.n; ++n) {
      const float* xp = x + c * hw + n * channel_stride;
      const float* dyp = dy + c * hw + n * channel_stride;
      double a = 0.0, b = 0.0;
#pragma omp simd reduction(+ : a, b)
      for (int64_t i = 0; i < hw; ++i) {
        const double d = static_cast<double>(dyp[i]);
        a += d;
        b += d * (static_cast<double>(xp[i]) - mean);
      }
      sum_dy += a;
      sum_dy_xc += b;
    }
    const double sum_dy_xhat = sum_dy_xc * invstd;
    if (dbeta != nullptr) dbeta[c] = static_cast<float>(sum_dy);
    if (dgamma != nullptr) dgamma[c] = static_cast<float>(sum_dy_xhat);
    if (dx == nullptr) continue;
    // dx = gamma * invstd * (dy - mean(dy) - xhat * mean(dy * xhat)) = k * dy + k_x * (x - mean) + k_0.
    const double k = (gamma != nullptr ? static_cast<double>(gamma[c]) : 1.0) * invstd;
    const double k_x = -k * invstd * invstd * sum_dy_xc / m;
    const double k_0 = -k * sum_dy / m;
    for (int n = 0; n < g.n; ++n) {
      const float* xp = x + c * hw + n * channel_stride;
      const float* dyp = dy + c * hw + n * channel_stride;
      float* dxp = dx + c * hw + n * channel_stride;
#pragma omp simd
      for (int64_t i = 0; i < hw; ++i) {
        dxp[i] = static_cast<float>(k * static_cast<double>(dyp[i]) +
                                    k_x * (static_cast<double>(xp[i]) - mean) + k_0);
      }
    }
  }
}

}  // namespace engine::cpu_fast
