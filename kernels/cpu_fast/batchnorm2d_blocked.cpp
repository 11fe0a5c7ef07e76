#include "kernels/cpu_fast/batchnorm2d_blocked.h"

#include <array>
#include <cmath>
#include <cstdint>

#include "core/error.h"
#include "kernels/cpu_fast/batchnorm_parts.h"
#include "kernels/cpu_fast/bf16_io.h"
#include "kernels/cpu_fast/channel_block.h"
#include "kernels/cpu_fast/map.h"  // ENGINE_CPU_CLONES
#include "kernels/cpu_fast/parallel.h"

namespace engine::cpu_fast {
namespace {

using bn_parts::grad_at;
using bn_parts::relu;
using std::int64_t;
template <int B>
using Lanes = std::array<double, B>;  // one double per channel of a block

// Where image n's cells of channel block cb start: the tensor is [N, C/B, HW, B].
struct Blocks {
  int64_t hw, count;  // cells a plane, blocks an image
  int64_t at(int n, int64_t cb, int b) const { return (n * count + cb) * hw * b; }
};

template <int B>  // with_channel_block checked that C is a multiple of B
Blocks blocks_of(const BatchNorm2dShape& g) {
  return {static_cast<int64_t>(g.h) * g.w, g.c / B};
}

// acc[j] += x[i, j] over one image's block [hw, B] (each lane in cell order).
template <int B, typename T>
ENGINE_CPU_CLONES void add_sums(const T* x, int64_t hw, Lanes<B>& acc) {
  for (int64_t i = 0; i < hw; ++i) {
#pragma omp simd
    for (int j = 0; j < B; ++j) acc[j] += static_cast<double>(loaded(x[i * B + j]));
  }
}

template <int B, typename T>
ENGINE_CPU_CLONES void add_sq_dev(const T* x, int64_t hw, const Lanes<B>& mean, Lanes<B>& acc) {
  for (int64_t i = 0; i < hw; ++i) {
#pragma omp simd
    for (int j = 0; j < B; ++j) {
      const double d = static_cast<double>(loaded(x[i * B + j])) - mean[j];
      acc[j] += d * d;
    }
  }
}

// y = (x - mean) * scale + shift in double, rounded to float once and, fused, passed through ReLU.
template <int B, bool kRelu, typename T>
ENGINE_CPU_CLONES void normalize(const T* x, T* y, int64_t hw, const Lanes<B>& mean, const Lanes<B>& scale,
                                 const Lanes<B>& shift) {
  for (int64_t i = 0; i < hw; ++i) {
#pragma omp simd
    for (int j = 0; j < B; ++j) {
      const float v =
          static_cast<float>((static_cast<double>(loaded(x[i * B + j])) - mean[j]) * scale[j] + shift[j]);
      y[i * B + j] = stored<T>(kRelu ? relu(v) : v);
    }
  }
}

// Per channel of the block: dy_sum += sum dy, dy_xc += sum dy * (x - mean).
template <int B, bool kMask, typename T>
ENGINE_CPU_CLONES void add_grad_sums(const T* x, const T* dy, const T* relu_y, int64_t hw,
                                     const Lanes<B>& mean, Lanes<B>& dy_sum, Lanes<B>& dy_xc) {
  for (int64_t i = 0; i < hw; ++i) {
#pragma omp simd
    for (int j = 0; j < B; ++j) {
      const double d = grad_at<kMask>(dy, relu_y, i * B + j);
      dy_sum[j] += d;
      dy_xc[j] += d * (static_cast<double>(loaded(x[i * B + j])) - mean[j]);
    }
  }
}

// dx = k * dy + k_x * (x - mean) + k_0.
template <int B, bool kMask, typename T>
ENGINE_CPU_CLONES void grad_input(const T* x, const T* dy, const T* relu_y, T* dx, int64_t hw,
                                  const Lanes<B>& mean, const Lanes<B>& k, const Lanes<B>& k_x,
                                  const Lanes<B>& k_0) {
  for (int64_t i = 0; i < hw; ++i) {
#pragma omp simd
    for (int j = 0; j < B; ++j) {
      const int64_t e = i * B + j;
      dx[e] = stored<T>(static_cast<float>(k[j] * grad_at<kMask>(dy, relu_y, e) +
                                           k_x[j] * (static_cast<double>(loaded(x[e])) - mean[j]) + k_0[j]));
    }
  }
}

// Normalises every image's block cb with per-lane mean, scale and shift.
template <int B, typename T>
void normalize_block(const BatchNorm2dShape& g, const Blocks& k, int64_t cb, const T* x, T* y, bool fuse_relu,
                     const Lanes<B>& mean, const Lanes<B>& scale, const Lanes<B>& shift) {
  for (int n = 0; n < g.n; ++n) {
    const int64_t o = k.at(n, cb, B);
    if (fuse_relu) {
      normalize<B, true>(x + o, y + o, k.hw, mean, scale, shift);
    } else {
      normalize<B, false>(x + o, y + o, k.hw, mean, scale, shift);
    }
  }
}

template <int B, typename T>
void forward_training(const BatchNorm2dShape& g, const T* x, const float* gamma, const float* beta, T* y,
                      float* save_mean, float* save_invstd, float* running_mean, float* running_var,
                      double momentum, double eps, bool fuse_relu, const float* running_mean_shift) {
  const Blocks k = blocks_of<B>(g);
  const double m = static_cast<double>(g.count());
#pragma omp parallel for if (static_cast <int64_t>(g.x_size()) >= kParallelMinElements) schedule(static)
  for (int64_t cb = 0; cb < k.count; ++cb) {
    Lanes<B> mean{}, sq{}, scale{}, shift{};
    for (int n = 0; n < g.n; ++n) add_sums<B>(x + k.at(n, cb, B), k.hw, mean);
    for (int j = 0; j < B; ++j) mean[j] /= m;
    for (int n = 0; n < g.n; ++n) add_sq_dev<B>(x + k.at(n, cb, B), k.hw, mean, sq);
    for (int j = 0; j < B; ++j) {
      const int c = static_cast<int>(cb * B + j);
      const double invstd = 1.0 / std::sqrt(sq[j] / m + eps);
      scale[j] = (gamma != nullptr ? static_cast<double>(gamma[c]) : 1.0) * invstd;
      shift[j] = beta != nullptr ? static_cast<double>(beta[c]) : 0.0;
      save_mean[c] = static_cast<float>(mean[j]);
      save_invstd[c] = static_cast<float>(invstd);
      bn_parts::update_running(c, mean[j], sq[j], m, momentum, running_mean, running_var, running_mean_shift);
    }
    normalize_block<B>(g, k, cb, x, y, fuse_relu, mean, scale, shift);
  }
}

template <int B, typename T>
void forward_eval(const BatchNorm2dShape& g, const T* x, const float* gamma, const float* beta,
                  const float* running_mean, const float* running_var, T* y, double eps, bool fuse_relu) {
  const Blocks k = blocks_of<B>(g);
#pragma omp parallel for if (static_cast <int64_t>(g.x_size()) >= kParallelMinElements) schedule(static)
  for (int64_t cb = 0; cb < k.count; ++cb) {
    Lanes<B> mean{}, scale{}, shift{};
    for (int j = 0; j < B; ++j) {
      const int c = static_cast<int>(cb * B + j);
      mean[j] = static_cast<double>(running_mean[c]);
      scale[j] = (gamma != nullptr ? static_cast<double>(gamma[c]) : 1.0) /
                 std::sqrt(static_cast<double>(running_var[c]) + eps);
      shift[j] = beta != nullptr ? static_cast<double>(beta[c]) : 0.0;
    }
    normalize_block<B>(g, k, cb, x, y, fuse_relu, mean, scale, shift);
  }
}

// Both backwards, as batchnorm2d.cpp's backward_impl (the reference's formula): per channel
// dbeta = sum dy, dgamma = sum dy * xhat, dx = k * dy + k_x * (x - mean) + k_0 (batch terms in training).
// mean_of/invstd_of give channel c's statistics in double.
template <int B, bool kMask, typename T, typename Stats>
void backward(const BatchNorm2dShape& g, const T* x, const float* gamma, Stats&& stats_of, const T* dy,
              const T* relu_y, T* dx, float* dgamma, float* dbeta, bool batch_terms) {
  const Blocks k = blocks_of<B>(g);
  const double m = static_cast<double>(g.count());
#pragma omp parallel for if (static_cast <int64_t>(g.x_size()) >= kParallelMinElements) schedule(static)
  for (int64_t cb = 0; cb < k.count; ++cb) {
    Lanes<B> mean{}, invstd{}, dy_sum{}, dy_xc{}, kk{}, k_x{}, k_0{};
    for (int j = 0; j < B; ++j) stats_of(static_cast<int>(cb * B + j), mean[j], invstd[j]);
    for (int n = 0; n < g.n; ++n) {
      const int64_t o = k.at(n, cb, B);
      add_grad_sums<B, kMask>(x + o, dy + o, kMask ? relu_y + o : nullptr, k.hw, mean, dy_sum, dy_xc);
    }
    for (int j = 0; j < B; ++j) {
      const int c = static_cast<int>(cb * B + j);
      if (dbeta != nullptr) dbeta[c] = static_cast<float>(dy_sum[j]);
      if (dgamma != nullptr) dgamma[c] = static_cast<float>(dy_xc[j] * invstd[j]);
      kk[j] = (gamma != nullptr ? static_cast<double>(gamma[c]) : 1.0) * invstd[j];
      k_x[j] = batch_terms ? -kk[j] * invstd[j] * invstd[j] * dy_xc[j] / m : 0.0;
      k_0[j] = batch_terms ? -kk[j] * dy_sum[j] / m : 0.0;
    }
    if (dx == nullptr) continue;
    for (int n = 0; n < g.n; ++n) {
      const int64_t o = k.at(n, cb, B);
      grad_input<B, kMask>(x + o, dy + o, kMask ? relu_y + o : nullptr, dx + o, k.hw, mean, kk, k_x, k_0);
    }
  }
}

template <int B, typename T, typename Stats>
void backward_any(const BatchNorm2dShape& g, const T* x, const float* gamma, Stats&& stats_of, const T* dy,
                  const T* relu_y, T* dx, float* dgamma, float* dbeta, bool batch_terms) {
  if (relu_y != nullptr) {
    backward<B, true>(g, x, gamma, stats_of, dy, relu_y, dx, dgamma, dbeta, batch_terms);
  } else {
    backward<B, false>(g, x, gamma, stats_of, dy, relu_y, dx, dgamma, dbeta, batch_terms);
  }
}

}  // namespace

template <typename T>
void batchnorm2d_forward_training_blocked(int block, const BatchNorm2dShape& g, const T* x,
                                          const float* gamma, const float* beta, T* y, float* save_mean,
                                          float* save_invstd, float* running_mean, float* running_var,
                                          double momentum, double eps, bool relu,
                                          const float* running_mean_shift) {
  bn_parts::check_forward_training(g, momentum, eps, x, y, save_mean, save_invstd, running_mean, running_var);
  with_channel_block("batchnorm2d", block, g.c, [&]<int B>() {
    forward_training<B>(g, x, gamma, beta, y, save_mean, save_invstd, running_mean, running_var, momentum,
                        eps, relu, running_mean_shift);
  });
}

template <typename T>
void batchnorm2d_forward_eval_blocked(int block, const BatchNorm2dShape& g, const T* x, const float* gamma,
                                      const float* beta, const float* running_mean, const float* running_var,
                                      T* y, double eps, bool relu) {
  g.validate();
  BatchNorm2dShape::validate_eps(eps);
  ENGINE_CHECK(x != nullptr && y != nullptr && running_mean != nullptr && running_var != nullptr,
               "batchnorm2d_forward_eval: x, y, running_mean and running_var must not be null");
  with_channel_block("batchnorm2d", block, g.c, [&]<int B>() {
    forward_eval<B>(g, x, gamma, beta, running_mean, running_var, y, eps, relu);
  });
}

template <typename T>
void batchnorm2d_backward_training_blocked(int block, const BatchNorm2dShape& g, const T* x,
                                           const float* gamma, const float* save_mean,
                                           const float* save_invstd, const T* dy, T* dx, float* dgamma,
                                           float* dbeta, const T* relu_y) {
  g.validate();
  ENGINE_CHECK(x != nullptr && dy != nullptr && save_mean != nullptr && save_invstd != nullptr,
               "batchnorm2d_backward_training: x, dy, save_mean and save_invstd must not be null");
  const auto stats = [&](int c, double& mean, double& invstd) {
    mean = static_cast<double>(save_mean[c]);
    invstd = static_cast<double>(save_invstd[c]);
  };
  with_channel_block("batchnorm2d", block, g.c, [&]<int B>() {
    backward_any<B>(g, x, gamma, stats, dy, relu_y, dx, dgamma, dbeta, /*batch_terms=*/true);
  });
}

template <typename T>
void batchnorm2d_backward_eval_blocked(int block, const BatchNorm2dShape& g, const T* x, const float* gamma,
                                       const float* running_mean, const float* running_var, const T* dy,
                                       T* dx, float* dgamma, float* dbeta, double eps, const T* relu_y) {
  g.validate();
  BatchNorm2dShape::validate_eps(eps);
  ENGINE_CHECK(x != nullptr && dy != nullptr && running_mean != nullptr && running_var != nullptr,
               "batchnorm2d_backward_eval: x, dy, running_mean and running_var must not be null");
  const auto stats = [&](int c, double& mean, double& invstd) {
    mean = static_cast<double>(running_mean[c]);
    invstd = 1.0 / std::sqrt(static_cast<double>(running_var[c]) + eps);
  };
  with_channel_block("batchnorm2d", block, g.c, [&]<int B>() {
    backward_any<B>(g, x, gamma, stats, dy, relu_y, dx, dgamma, dbeta, /*batch_terms=*/false);
  });
}

template void batchnorm2d_forward_training_blocked<float>(int, const BatchNorm2dShape&, const float*,
                                                          const float*, const float*, float*, float*, float*,
                                                          float*, float*, double, double, bool, const float*);
template void batchnorm2d_forward_eval_blocked<float>(int, const BatchNorm2dShape&, const float*,
                                                      const float*, const float*, const float*, const float*,
                                                      float*, double, bool);
template void batchnorm2d_backward_training_blocked<float>(int, const BatchNorm2dShape&, const float*,
                                                           const float*, const float*, const float*,
                                                           const float*, float*, float*, float*,
                                                           const float*);
template void batchnorm2d_backward_eval_blocked<float>(int, const BatchNorm2dShape&, const float*,
                                                       const float*, const float*, const float*, const float*,
                                                       float*, float*, float*, double, const float*);

template void batchnorm2d_forward_training_blocked<bfloat16>(int, const BatchNorm2dShape&, const bfloat16*,
                                                             const float*, const float*, bfloat16*, float*,
                                                             float*, float*, float*, double, double, bool,
                                                             const float*);
template void batchnorm2d_forward_eval_blocked<bfloat16>(int, const BatchNorm2dShape&, const bfloat16*,
                                                         const float*, const float*, const float*,
                                                         const float*, bfloat16*, double, bool);
template void batchnorm2d_backward_training_blocked<bfloat16>(int, const BatchNorm2dShape&, const bfloat16*,
                                                              const float*, const float*, const float*,
                                                              const bfloat16*, bfloat16*, float*, float*,
                                                              const bfloat16*);
template void batchnorm2d_backward_eval_blocked<bfloat16>(int, const BatchNorm2dShape&, const bfloat16*,
                                                          const float*, const float*, const float*,
                                                          const bfloat16*, bfloat16*, float*, float*, double,
                                                          const bfloat16*);

}  // namespace engine::cpu_fast
