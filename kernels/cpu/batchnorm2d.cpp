#include "kernels/cpu/batchnorm2d.h"

#include <cmath>
#include <vector>

#include "core/error.h"

namespace engine::cpu {
namespace {

// Offset of the i-th spatial value (i in [0, H*W)) of channel c in sample n.
inline std::size_t offset(const BatchNorm2dShape& g, int n, int c, std::size_t i) {
  const std::size_t hw = static_cast<std::size_t>(g.h) * static_cast<std::size_t>(g.w);
  return (static_cast<std::size_t>(n) * static_cast<std::size_t>(g.c) + static_cast<std::size_t>(c)) * hw + i;
}

inline std::size_t spatial(const BatchNorm2dShape& g) {
  return static_cast<std::size_t>(g.h) * static_cast<std::size_t>(g.w);
}

template <typename T>
double gamma_of(const T* gamma, int c) {
  return gamma != nullptr ? static_cast<double>(gamma[c]) : 1.0;
}
template <typename T>
double beta_of(const T* beta, int c) {
  return beta != nullptr ? static_cast<double>(beta[c]) : 0.0;
}

}  // namespace

template <typename T>
void batchnorm2d_forward_training(const BatchNorm2dShape& g, const T* x, const T* gamma, const T* beta, T* y,
                                  T* save_mean, T* save_invstd, T* running_mean, T* running_var,
                                  double momentum, double eps, const T* running_mean_shift) {
  g.validate_training(momentum, eps);
  ENGINE_CHECK(x != nullptr && y != nullptr && save_mean != nullptr && save_invstd != nullptr,
               "batchnorm2d_forward_training: x, y, save_mean and save_invstd must not be null");
  ENGINE_CHECK(
      (running_mean == nullptr) == (running_var == nullptr),
      "batchnorm2d_forward_training: running_mean and running_var must both be given or both be null");
  const std::size_t hw = spatial(g);
  const double m = static_cast<double>(g.count());
  for (int c = 0; c < g.c; ++c) {
    // Two passes (mean, then squared deviations) so the variance does not suffer the cancellation of
    // E[x^2] - E[x]^2.
    double sum = 0.0;
    for (int n = 0; n < g.n; ++n) {
      for (std::size_t i = 0; i < hw; ++i) sum += static_cast<double>(x[offset(g, n, c, i)]);
    }
    const double mean = sum / m;
    double sum_sq = 0.0;
    for (int n = 0; n < g.n; ++n) {
      for (std::size_t i = 0; i < hw; ++i) {
        const double d = static_cast<double>(x[offset(g, n, c, i)]) - mean;
        sum_sq += d * d;
      }
    }
    const double invstd = 1.0 / std::sqrt(sum_sq / m + eps);
    const double scale = gamma_of(gamma, c) * invstd;
    const double shift = beta_of(beta, c);
    for (int n = 0; n < g.n; ++n) {
      for (std::size_t i = 0; i < hw; ++i) {
        const std::size_t o = offset(g, n, c, i);
        y[o] = static_cast<T>((static_cast<double>(x[o]) - mean) * scale + shift);
      }
    }
    save_mean[c] = static_cast<T>(mean);
    save_invstd[c] = static_cast<T>(invstd);
    if (running_mean != nullptr) {
      const double shifted =
          mean + (running_mean_shift != nullptr ? static_cast<double>(running_mean_shift[c]) : 0.0);
      running_mean[c] =
          static_cast<T>((1.0 - momentum) * static_cast<double>(running_mean[c]) + momentum * shifted);
      running_var[c] = static_cast<T>((1.0 - momentum) * static_cast<double>(running_var[c]) +
                                      momentum * sum_sq / (m - 1.0));
    }
  }
}

template <typename T>
void batchnorm2d_forward_eval(const BatchNorm2dShape& g, const T* x, const T* gamma, const T* beta,
                              const T* running_mean, const T* running_var, T* y, double eps) {
  g.validate();
  BatchNorm2dShape::validate_eps(eps);
  ENGINE_CHECK(x != nullptr && y != nullptr && running_mean != nullptr && running_var != nullptr,
               "batchnorm2d_forward_eval: x, y, running_mean and running_var must not be null");
  const std::size_t hw = spatial(g);
  for (int c = 0; c < g.c; ++c) {
    const double mean = static_cast<double>(running_mean[c]);
    const double scale = gamma_of(gamma, c) / std::sqrt(static_cast<double>(running_var[c]) + eps);
    const double shift = beta_of(beta, c);
    for (int n = 0; n < g.n; ++n) {
      for (std::size_t i = 0; i < hw; ++i) {
        const std::size_t o = offset(g, n, c, i);
        y[o] = static_cast<T>((static_cast<double>(x[o]) - mean) * scale + shift);
      }
    }
  }
}

namespace {

// Both backwards share this: per channel, with xhat = (x - mean) * invstd,
//   dbeta = sum dy, dgamma = sum dy * xhat,
//   dx = gamma * invstd * (dy - batch_terms * (dbeta / M + xhat * dgamma / M)),
// where batch_terms is 1 in training (mean and invstd depend on x) and 0 in eval (they are constants).
template <typename T>
void backward_impl(const BatchNorm2dShape& g, const T* x, const T* gamma, const double* mean,
                   const double* invstd, const T* dy, T* dx, T* dgamma, T* dbeta, bool batch_terms) {
  const std::size_t hw = spatial(g);
  const double m = static_cast<double>(g.count());
  for (int c = 0; c < g.c; ++c) {
    double sum_dy = 0.0, sum_dy_xhat = 0.0;
    for (int n = 0; n < g.n; ++n) {
      for (std::size_t i = 0; i < hw; ++i) {
        const std::size_t o = offset(g, n, c, i);
        const double d = static_cast<double>(dy[o]);
        sum_dy += d;
        sum_dy_xhat += d * (static_cast<double>(x[o]) - mean[c]) * invstd[c];
      }
    }
    if (dbeta != nullptr) dbeta[c] = static_cast<T>(sum_dy);
    if (dgamma != nullptr) dgamma[c] = static_cast<T>(sum_dy_xhat);
    if (dx == nullptr) continue;
    const double scale = gamma_of(gamma, c) * invstd[c];
    const double mean_dy = batch_terms ? sum_dy / m : 0.0;
    const double mean_dy_xhat = batch_terms ? sum_dy_xhat / m : 0.0;
    for (int n = 0; n < g.n; ++n) {
      for (std::size_t i = 0; i < hw; ++i) {
        const std::size_t o = offset(g, n, c, i);
        const double xhat = (static_cast<double>(x[o]) - mean[c]) * invstd[c];
        dx[o] = static_cast<T>(scale * (static_cast<double>(dy[o]) - mean_dy - xhat * mean_dy_xhat));
      }
    }
  }
}

}  // namespace

template <typename T>
void batchnorm2d_backward_training(const BatchNorm2dShape& g, const T* x, const T* gamma, const T* save_mean,
                                   const T* save_invstd, const T* dy, T* dx, T* dgamma, T* dbeta) {
  g.validate();
  ENGINE_CHECK(x != nullptr && dy != nullptr && save_mean != nullptr && save_invstd != nullptr,
               "batchnorm2d_backward_training: x, dy, save_mean and save_invstd must not be null");
  std::vector<double> mean(static_cast<std::size_t>(g.c)), invstd(static_cast<std::size_t>(g.c));
  for (int c = 0; c < g.c; ++c) {
    mean[static_cast<std::size_t>(c)] = static_cast<double>(save_mean[c]);
    invstd[static_cast<std::size_t>(c)] = static_cast<double>(save_invstd[c]);
  }
  backward_impl(g, x, gamma, mean.data(), invstd.data(), dy, dx, dgamma, dbeta, /*batch_terms=*/true);
}

template <typename T>
void batchnorm2d_backward_eval(const BatchNorm2dShape& g, const T* x, const T* gamma, const T* running_mean,
                               const T* running_var, const T* dy, T* dx, T* dgamma, T* dbeta, double eps) {
  g.validate();
  BatchNorm2dShape::validate_eps(eps);
  ENGINE_CHECK(x != nullptr && dy != nullptr && running_mean != nullptr && running_var != nullptr,
               "batchnorm2d_backward_eval: x, dy, running_mean and running_var must not be null");
  std::vector<double> mean(static_cast<std::size_t>(g.c)), invstd(static_cast<std::size_t>(g.c));
  for (int c = 0; c < g.c; ++c) {
    mean[static_cast<std::size_t>(c)] = static_cast<double>(running_mean[c]);
    invstd[static_cast<std::size_t>(c)] = 1.0 / std::sqrt(static_cast<double>(running_var[c]) + eps);
  }
  backward_impl(g, x, gamma, mean.data(), invstd.data(), dy, dx, dgamma, dbeta, /*batch_terms=*/false);
}

template void batchnorm2d_forward_training<float>(const BatchNorm2dShape&, const float*, const float*,
                                                  const float*, float*, float*, float*, float*, float*,
                                                  double, double, const float*);
template void batchnorm2d_forward_eval<float>(const BatchNorm2dShape&, const float*, const float*,
                                              const float*, const float*, const float*, float*, double);
template void batchnorm2d_backward_training<float>(const BatchNorm2dShape&, const float*, const float*,
                                                   const float*, const float*, const float*, float*, float*,
                                                   float*);
template void batchnorm2d_backward_eval<float>(const BatchNorm2dShape&, const float*, const float*,
                                               const float*, const float*, const float*, float*, float*,
                                               float*, double);
template void batchnorm2d_forward_training<double>(const BatchNorm2dShape&, const double*, const double*,
                                                   const double*, double*, double*, double*, double*, double*,
                                                   double, double, const double*);
template void batchnorm2d_forward_eval<double>(const BatchNorm2dShape&, const double*, const double*,
                                               const double*, const double*, const double*, double*, double);
template void batchnorm2d_backward_training<double>(const BatchNorm2dShape&, const double*, const double*,
                                                    const double*, const double*, const double*, double*,
                                                    double*, double*);
template void batchnorm2d_backward_eval<double>(const BatchNorm2dShape&, const double*, const double*,
                                                const double*, const double*, const double*, double*, double*,
                                                double*, double);

}  // namespace engine::cpu
