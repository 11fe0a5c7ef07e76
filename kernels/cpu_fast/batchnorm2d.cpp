#include "kernels/cpu_fast/batchnorm2d.h"

#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "core/error.h"
#include "kernels/cpu_fast/batchnorm_parts.h"
#include "kernels/cpu_fast/bf16_io.h"
#include "kernels/cpu_fast/map.h"  // ENGINE_CPU_CLONES
#include "kernels/cpu_fast/parallel.h"

namespace engine::cpu_fast {
namespace {

using bn_parts::grad_at;
using bn_parts::relu;
using std::int64_t;

// T is the activations' storage, float or bfloat16 (bf16_io.h: read widened; each output rounded to
// float as before, then to bf16 once, the bits the float32 kernel's output rounded to bf16 would have).
// Parameters, statistics and parameter gradients are float32 either way.
// The per-plane loops are compiled for AVX-512 and AVX2 too (ENGINE_CPU_CLONES, map.h: one is picked at load
// time by the CPU): their double arithmetic runs 8 lanes wide instead of SSE2's 2.

// Sum of n values in double: independent vector lanes, so the loop vectorises without reassociating
// anything the reference would not (it is still a double sum of the same values, to double rounding).
template <typename T>
inline __attribute__((always_inline)) double sum(const T* v, int64_t n) {
  double acc = 0.0;
#pragma omp simd reduction(+ : acc)
  for (int64_t i = 0; i < n; ++i) acc += static_cast<double>(loaded(v[i]));
  return acc;
}

template <typename T>
inline __attribute__((always_inline)) double sum_sq_dev(const T* v, int64_t n, double mean) {
  double acc = 0.0;
#pragma omp simd reduction(+ : acc)
  for (int64_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(loaded(v[i])) - mean;
    acc += d * d;
  }
  return acc;
}

// y = (x - mean) * scale + shift over one plane, in double as the reference (BatchNorm divides by the
// spread: when it is tiny against the mean, (x - mean) rounded to float would be amplified by invstd), then
// rounded to float once and, fused, passed through ReLU, as relu_forward would on the stored value.
template <bool kRelu, typename T>
inline __attribute__((always_inline)) void normalize_plane(const T* x, T* y, int64_t hw, double mean,
                                                           double scale, double shift) {
#pragma omp simd
  for (int64_t i = 0; i < hw; ++i) {
    const float v = static_cast<float>((static_cast<double>(loaded(x[i])) - mean) * scale + shift);
    y[i] = stored<T>(kRelu ? relu(v) : v);
  }
}

struct PlaneSums {
  double dy = 0.0, dy_xc = 0.0;  // sum dy, sum dy * (x - mean)
};

template <bool kMask, typename T>
inline __attribute__((always_inline)) PlaneSums grad_sums(const T* x, const T* dy, const T* relu_y,
                                                          int64_t hw, double mean) {
  double a = 0.0, b = 0.0;
#pragma omp simd reduction(+ : a, b)
  for (int64_t i = 0; i < hw; ++i) {
    const double d = grad_at<kMask>(dy, relu_y, i);
    a += d;
    b += d * (static_cast<double>(loaded(x[i])) - mean);
  }
  return {a, b};
}

// dx = k * dy + k_x * (x - mean) + k_0 over one plane.
template <bool kMask, typename T>
inline __attribute__((always_inline)) void grad_input_plane(const T* x, const T* dy, const T* relu_y, T* dx,
                                                            int64_t hw, double mean, double k, double k_x,
                                                            double k_0) {
#pragma omp simd
  for (int64_t i = 0; i < hw; ++i) {
    dx[i] = stored<T>(static_cast<float>(k * grad_at<kMask>(dy, relu_y, i) +
                                         k_x * (static_cast<double>(loaded(x[i])) - mean) + k_0));
  }
}

// One channel's planes (n of them, hw values each, `stride` apart) at once: the per-plane loops above inlined
// into one clone-dispatched call per channel, not per plane, their trip count a constant at the late stages'
// small maps (1x1, 2x2, 3x3), where the 8-lane loop would not run and its scalar remainder, branches and all,
// did every value (densenet121's BatchNorms at 2x2 and 1x1: 64 planes of 4 or 1 values per channel).
template <typename F>
inline __attribute__((always_inline)) void with_plane_size(int64_t hw, F&& f) {
  switch (hw) {
    case 1: f(std::integral_constant<int64_t, 1>{}); return;
    case 4: f(std::integral_constant<int64_t, 4>{}); return;
    case 9: f(std::integral_constant<int64_t, 9>{}); return;
    default: f(hw);
  }
}

template <typename T>
ENGINE_CPU_CLONES double channel_sum(const T* xc, int64_t n, int64_t hw, int64_t stride) {
  double total = 0.0;
  with_plane_size(
      hw, [&](auto size) __attribute__((always_inline)) {
        for (int64_t i = 0; i < n; ++i) total += sum(xc + i * stride, size);
      });
  return total;
}

template <typename T>
ENGINE_CPU_CLONES double channel_sum_sq_dev(const T* xc, int64_t n, int64_t hw, int64_t stride, double mean) {
  double sq = 0.0;
  with_plane_size(
      hw, [&](auto size) __attribute__((always_inline)) {
        for (int64_t i = 0; i < n; ++i) sq += sum_sq_dev(xc + i * stride, size, mean);
      });
  return sq;
}

template <bool kRelu, typename T>
ENGINE_CPU_CLONES void normalize_channel(const T* xc, T* yc, int64_t n, int64_t hw, int64_t stride,
                                         double mean, double scale, double shift) {
  with_plane_size(
      hw, [&](auto size) __attribute__((always_inline)) {
        for (int64_t i = 0; i < n; ++i)
          normalize_plane<kRelu>(xc + i * stride, yc + i * stride, size, mean, scale, shift);
      });
}

template <bool kMask, typename T>
ENGINE_CPU_CLONES PlaneSums channel_grad_sums(const T* xc, const T* dyc, const T* relu_yc, int64_t n,
                                              int64_t hw, int64_t stride, double mean) {
  PlaneSums total;
  with_plane_size(
      hw, [&](auto size) __attribute__((always_inline)) {
        for (int64_t i = 0; i < n; ++i) {
          const int64_t o = i * stride;
          const PlaneSums p = grad_sums<kMask>(xc + o, dyc + o, kMask ? relu_yc + o : nullptr, size, mean);
          total.dy += p.dy;
          total.dy_xc += p.dy_xc;
        }
      });
  return total;
}

template <bool kMask, typename T>
ENGINE_CPU_CLONES void grad_input_channel(const T* xc, const T* dyc, const T* relu_yc, T* dxc, int64_t n,
                                          int64_t hw, int64_t stride, double mean, double k, double k_x,
                                          double k_0) {
  with_plane_size(
      hw, [&](auto size) __attribute__((always_inline)) {
        for (int64_t i = 0; i < n; ++i) {
          const int64_t o = i * stride;
          grad_input_plane<kMask>(xc + o, dyc + o, kMask ? relu_yc + o : nullptr, dxc + o, size, mean, k, k_x,
                                  k_0);
        }
      });
}

// Both backwards, as the reference's backward_impl: per channel, with xhat = (x - mean) * invstd,
//   dbeta = sum dy, dgamma = sum dy * xhat,
//   dx = gamma * invstd * (dy - batch_terms * (dbeta / M + xhat * dgamma / M))
//      = k * dy + k_x * (x - mean) + k_0,
// batch_terms 1 in training (the statistics depend on x), 0 in eval. dy is masked by relu_y when given.
template <bool kMask, typename T>
void backward_impl(const BatchNorm2dShape& g, const T* x, const float* gamma, const double* mean_of,
                   const double* invstd_of, const T* dy, const T* relu_y, T* dx, float* dgamma, float* dbeta,
                   bool batch_terms) {
  const int64_t hw = static_cast<int64_t>(g.h) * g.w;
  const int64_t channel_stride = hw * g.c;
  const double m = static_cast<double>(g.count());
#pragma omp parallel for if (static_cast <int64_t>(g.x_size()) >= kParallelMinElements) schedule(static)
  for (int c = 0; c < g.c; ++c) {
    const double mean = mean_of[c];
    const double invstd = invstd_of[c];
    const int64_t oc = c * hw;
    const PlaneSums total = channel_grad_sums<kMask>(x + oc, dy + oc, kMask ? relu_y + oc : nullptr, g.n, hw,
                                                     channel_stride, mean);
    if (dbeta != nullptr) dbeta[c] = static_cast<float>(total.dy);
    if (dgamma != nullptr) dgamma[c] = static_cast<float>(total.dy_xc * invstd);
    if (dx == nullptr) continue;
    const double k = (gamma != nullptr ? static_cast<double>(gamma[c]) : 1.0) * invstd;
    const double k_x = batch_terms ? -k * invstd * invstd * total.dy_xc / m : 0.0;
    const double k_0 = batch_terms ? -k * total.dy / m : 0.0;
    grad_input_channel<kMask>(x + oc, dy + oc, kMask ? relu_y + oc : nullptr, dx + oc, g.n, hw,
                              channel_stride, mean, k, k_x, k_0);
  }
}

template <typename T>
void backward(const BatchNorm2dShape& g, const T* x, const float* gamma, const double* mean,
              const double* invstd, const T* dy, const T* relu_y, T* dx, float* dgamma, float* dbeta,
              bool batch_terms) {
  if (relu_y != nullptr) {
    backward_impl<true>(g, x, gamma, mean, invstd, dy, relu_y, dx, dgamma, dbeta, batch_terms);
  } else {
    backward_impl<false>(g, x, gamma, mean, invstd, dy, relu_y, dx, dgamma, dbeta, batch_terms);
  }
}

template <typename T>
void forward_training(const BatchNorm2dShape& g, const T* x, const float* gamma, const float* beta, T* y,
                      float* save_mean, float* save_invstd, float* running_mean, float* running_var,
                      double momentum, double eps, bool relu, const float* running_mean_shift) {
  bn_parts::check_forward_training(g, momentum, eps, x, y, save_mean, save_invstd, running_mean, running_var);
  const int64_t hw = static_cast<int64_t>(g.h) * g.w;
  const int64_t channel_stride = hw * g.c;
  const double m = static_cast<double>(g.count());
#pragma omp parallel for if (static_cast <int64_t>(g.x_size()) >= kParallelMinElements) schedule(static)
  for (int c = 0; c < g.c; ++c) {
    const T* xc = x + c * hw;
    const double mean = channel_sum(xc, g.n, hw, channel_stride) / m;
    const double sq = channel_sum_sq_dev(xc, g.n, hw, channel_stride, mean);
    const double invstd = 1.0 / std::sqrt(sq / m + eps);
    const double scale = (gamma != nullptr ? static_cast<double>(gamma[c]) : 1.0) * invstd;
    const double shift = beta != nullptr ? static_cast<double>(beta[c]) : 0.0;
    if (relu) {
      normalize_channel<true>(xc, y + c * hw, g.n, hw, channel_stride, mean, scale, shift);
    } else {
      normalize_channel<false>(xc, y + c * hw, g.n, hw, channel_stride, mean, scale, shift);
    }
    save_mean[c] = static_cast<float>(mean);
    save_invstd[c] = static_cast<float>(invstd);
    bn_parts::update_running(c, mean, sq, m, momentum, running_mean, running_var, running_mean_shift);
  }
}

template <typename T>
void forward_eval(const BatchNorm2dShape& g, const T* x, const float* gamma, const float* beta,
                  const float* running_mean, const float* running_var, T* y, double eps, bool relu) {
  g.validate();
  BatchNorm2dShape::validate_eps(eps);
  ENGINE_CHECK(x != nullptr && y != nullptr && running_mean != nullptr && running_var != nullptr,
               "batchnorm2d_forward_eval: x, y, running_mean and running_var must not be null");
  const int64_t hw = static_cast<int64_t>(g.h) * g.w;
  const int64_t channel_stride = hw * g.c;
#pragma omp parallel for if (static_cast <int64_t>(g.x_size()) >= kParallelMinElements) schedule(static)
  for (int c = 0; c < g.c; ++c) {
    const double mean = static_cast<double>(running_mean[c]);
    const double scale = (gamma != nullptr ? static_cast<double>(gamma[c]) : 1.0) /
                         std::sqrt(static_cast<double>(running_var[c]) + eps);
    const double shift = beta != nullptr ? static_cast<double>(beta[c]) : 0.0;
    const int64_t oc = c * hw;
    if (relu) {
      normalize_channel<true>(x + oc, y + oc, g.n, hw, channel_stride, mean, scale, shift);
    } else {
      normalize_channel<false>(x + oc, y + oc, g.n, hw, channel_stride, mean, scale, shift);
    }
  }
}

template <typename T>
void backward_training(const BatchNorm2dShape& g, const T* x, const float* gamma, const float* save_mean,
                       const float* save_invstd, const T* dy, T* dx, float* dgamma, float* dbeta,
                       const T* relu_y) {
  g.validate();
  ENGINE_CHECK(x != nullptr && dy != nullptr && save_mean != nullptr && save_invstd != nullptr,
               "batchnorm2d_backward_training: x, dy, save_mean and save_invstd must not be null");
  std::vector<double> mean(static_cast<std::size_t>(g.c)), invstd(static_cast<std::size_t>(g.c));
  for (std::size_t c = 0; c < mean.size(); ++c) {
    mean[c] = static_cast<double>(save_mean[c]);
    invstd[c] = static_cast<double>(save_invstd[c]);
  }
  backward(g, x, gamma, mean.data(), invstd.data(), dy, relu_y, dx, dgamma, dbeta, /*batch_terms=*/true);
}

template <typename T>
void backward_eval(const BatchNorm2dShape& g, const T* x, const float* gamma, const float* running_mean,
                   const float* running_var, const T* dy, T* dx, float* dgamma, float* dbeta, double eps,
                   const T* relu_y) {
  g.validate();
  BatchNorm2dShape::validate_eps(eps);
  ENGINE_CHECK(x != nullptr && dy != nullptr && running_mean != nullptr && running_var != nullptr,
               "batchnorm2d_backward_eval: x, dy, running_mean and running_var must not be null");
  std::vector<double> mean(static_cast<std::size_t>(g.c)), invstd(static_cast<std::size_t>(g.c));
  for (std::size_t c = 0; c < mean.size(); ++c) {
    mean[c] = static_cast<double>(running_mean[c]);
    invstd[c] = 1.0 / std::sqrt(static_cast<double>(running_var[c]) + eps);
  }
  backward(g, x, gamma, mean.data(), invstd.data(), dy, relu_y, dx, dgamma, dbeta, /*batch_terms=*/false);
}

}  // namespace

void batchnorm2d_forward_training(const BatchNorm2dShape& g, const float* x, const float* gamma,
                                  const float* beta, float* y, float* save_mean, float* save_invstd,
                                  float* running_mean, float* running_var, double momentum, double eps,
                                  bool relu, const float* running_mean_shift) {
  forward_training(g, x, gamma, beta, y, save_mean, save_invstd, running_mean, running_var, momentum, eps,
                   relu, running_mean_shift);
}
void batchnorm2d_forward_training(const BatchNorm2dShape& g, const bfloat16* x, const float* gamma,
                                  const float* beta, bfloat16* y, float* save_mean, float* save_invstd,
                                  float* running_mean, float* running_var, double momentum, double eps,
                                  bool relu, const float* running_mean_shift) {
  forward_training(g, x, gamma, beta, y, save_mean, save_invstd, running_mean, running_var, momentum, eps,
                   relu, running_mean_shift);
}

void batchnorm2d_forward_eval(const BatchNorm2dShape& g, const float* x, const float* gamma,
                              const float* beta, const float* running_mean, const float* running_var,
                              float* y, double eps, bool relu) {
  forward_eval(g, x, gamma, beta, running_mean, running_var, y, eps, relu);
}
void batchnorm2d_forward_eval(const BatchNorm2dShape& g, const bfloat16* x, const float* gamma,
                              const float* beta, const float* running_mean, const float* running_var,
                              bfloat16* y, double eps, bool relu) {
  forward_eval(g, x, gamma, beta, running_mean, running_var, y, eps, relu);
}

void batchnorm2d_backward_training(const BatchNorm2dShape& g, const float* x, const float* gamma,
                                   const float* save_mean, const float* save_invstd, const float* dy,
                                   float* dx, float* dgamma, float* dbeta, const float* relu_y) {
  backward_training(g, x, gamma, save_mean, save_invstd, dy, dx, dgamma, dbeta, relu_y);
}
void batchnorm2d_backward_training(const BatchNorm2dShape& g, const bfloat16* x, const float* gamma,
                                   const float* save_mean, const float* save_invstd, const bfloat16* dy,
                                   bfloat16* dx, float* dgamma, float* dbeta, const bfloat16* relu_y) {
  backward_training(g, x, gamma, save_mean, save_invstd, dy, dx, dgamma, dbeta, relu_y);
}

void batchnorm2d_backward_eval(const BatchNorm2dShape& g, const float* x, const float* gamma,
                               const float* running_mean, const float* running_var, const float* dy,
                               float* dx, float* dgamma, float* dbeta, double eps, const float* relu_y) {
  backward_eval(g, x, gamma, running_mean, running_var, dy, dx, dgamma, dbeta, eps, relu_y);
}
void batchnorm2d_backward_eval(const BatchNorm2dShape& g, const bfloat16* x, const float* gamma,
                               const float* running_mean, const float* running_var, const bfloat16* dy,
                               bfloat16* dx, float* dgamma, float* dbeta, double eps,
                               const bfloat16* relu_y) {
  backward_eval(g, x, gamma, running_mean, running_var, dy, dx, dgamma, dbeta, eps, relu_y);
}

}  // namespace engine::cpu_fast
