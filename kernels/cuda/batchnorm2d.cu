// BatchNorm2d kernels. The statistics and the backward sums are per-channel reductions in double, split
// over a (channel, chunk) grid and finished in a fixed order (channel_reduce.cuh): deterministic. The
// forward statistics use shifted sums, S1 = sum (x - K), S2 = sum (x - K)^2 with K the channel's first value:
// one read of x, and no E[x^2] - E[x]^2 cancellation when |mean| >> std, because the sums are about the data
// (x - K), not its offset. See batchnorm2d.h for the full reasoning. The elementwise passes (normalize,
// dx) run in float with per-channel coefficients prepared in double.
#include <cmath>

#include "kernels/cuda/batchnorm2d.h"
#include "kernels/cuda/batchnorm_parts.cuh"
#include "kernels/cuda/nvtx.h"

namespace engine::cuda {
namespace {

using detail::backward_stats_kernel;
using detail::grad_input_kernel;
using detail::GradSums;
using detail::normalize_kernel;
using detail::ShiftedSums;

// ---- forward ----

struct StatsArgs {
  const double* partial;
  int chunks, c_count, hw;
  double m, momentum, eps;
  const float* x;
  const float* gamma;
  float* save_mean;
  float* save_invstd;
  float* running_mean;
  float* running_var;
  float* coef;  // scratch, 3 floats per channel for the normalize pass (see normalize_kernel)
};

__global__ void finish_stats_kernel(StatsArgs a) {
  const int c = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (c >= a.c_count) return;
  double s1 = 0.0, s2 = 0.0;
  for (int j = 0; j < a.chunks; ++j) {
    s1 += a.partial[(static_cast<std::int64_t>(c) * a.chunks + j) * 2];
    s2 += a.partial[(static_cast<std::int64_t>(c) * a.chunks + j) * 2 + 1];
  }
  const double shift = static_cast<double>(a.x[static_cast<std::int64_t>(c) * a.hw]);
  const double mean = shift + s1 / a.m;
  // sum (x - mean)^2 = S2 - S1^2 / M; rounding can make a constant channel's value a tiny negative.
  const double sum_sq = fmax(s2 - s1 * s1 / a.m, 0.0);
  const double invstd = 1.0 / sqrt(sum_sq / a.m + a.eps);
  a.save_mean[c] = static_cast<float>(mean);
  a.save_invstd[c] = static_cast<float>(invstd);
  float* k = a.coef + static_cast<std::int64_t>(c) * 3;
  k[0] = static_cast<float>(shift);     // exact: a value of x
  k[1] = static_cast<float>(s1 / a.m);  // mean - shift, small next to the data's offset
  k[2] = static_cast<float>((a.gamma != nullptr ? static_cast<double>(a.gamma[c]) : 1.0) * invstd);
  if (a.running_mean != nullptr) {
    a.running_mean[c] =
        static_cast<float>((1.0 - a.momentum) * static_cast<double>(a.running_mean[c]) + a.momentum * mean);
    a.running_var[c] = static_cast<float>((1.0 - a.momentum) * static_cast<double>(a.running_var[c]) +
                                          a.momentum * sum_sq / (a.m - 1.0));
  }
}

// Eval: shift = running_mean, mean - shift = 0, scale = gamma / sqrt(running_var + eps) (formed in double).
__global__ void eval_coefficients_kernel(const float* gamma, const float* running_mean,
                                         const float* running_var, double eps, int c_count, float* coef) {
  const int c = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (c >= c_count) return;
  const double g = gamma != nullptr ? static_cast<double>(gamma[c]) : 1.0;
  float* k = coef + static_cast<std::int64_t>(c) * 3;
  k[0] = running_mean[c];
  k[1] = 0.0f;
  k[2] = static_cast<float>(g / sqrt(static_cast<double>(running_var[c]) + eps));
}

// ---- backward ----

// Per channel: the coefficients of dx = scale * (dy - mean_dy - xhat * mean_dy_xhat), xhat = (x - mean) *
// invstd, as 5 floats [mean, invstd, scale, mean_dy, mean_dy_xhat]; and dgamma, dbeta.
struct GradArgs {
  const double* partial;
  int chunks, c_count;
  double m;
  bool batch_terms;
  const double* mean;
  const double* invstd;
  const float* gamma;
  float* dgamma;
  float* dbeta;
  float* coef;
};

__global__ void finish_grad_kernel(GradArgs a) {
  const int c = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (c >= a.c_count) return;
  double sum_dy = 0.0, sum_dy_xhat = 0.0;
  for (int j = 0; j < a.chunks; ++j) {
    sum_dy += a.partial[(static_cast<std::int64_t>(c) * a.chunks + j) * 2];
    sum_dy_xhat += a.partial[(static_cast<std::int64_t>(c) * a.chunks + j) * 2 + 1];
  }
  if (a.dbeta != nullptr) a.dbeta[c] = static_cast<float>(sum_dy);
  if (a.dgamma != nullptr) a.dgamma[c] = static_cast<float>(sum_dy_xhat);
  float* k = a.coef + static_cast<std::int64_t>(c) * 5;
  k[0] = static_cast<float>(a.mean[c]);
  k[1] = static_cast<float>(a.invstd[c]);
  k[2] = static_cast<float>((a.gamma != nullptr ? static_cast<double>(a.gamma[c]) : 1.0) * a.invstd[c]);
  k[3] = a.batch_terms ? static_cast<float>(sum_dy / a.m) : 0.0f;
  k[4] = a.batch_terms ? static_cast<float>(sum_dy_xhat / a.m) : 0.0f;
}

void check_shape(const char* op, const BatchNorm2dShape& s, double eps) {
  s.validate();
  ENGINE_CHECK(eps >= 0.0, "{}: eps must not be negative, got {}", op, eps);
  detail::check_fits_int(static_cast<std::int64_t>(s.h) * s.w, "H*W", op);
  detail::check_fits_int(static_cast<std::int64_t>(s.x_size()), "N*C*H*W", op);
}

// The shared backward: training (saved mean/invstd, batch terms) or eval (running stats, no batch terms).
void backward(cudaStream_t stream, const char* op, const BatchNorm2dShape& s, const float* x,
              const float* gamma, const float* mean_in, const float* invstd_in, const float* running_var,
              double eps, bool batch_terms, const float* dy, float* dx, float* dgamma, float* dbeta) {
  ENGINE_CHECK(x != nullptr && dy != nullptr && mean_in != nullptr,
               "{}: x, dy and the statistics must not be null", op);
  ENGINE_CHECK(gamma != nullptr || dgamma == nullptr, "{}: dgamma given without gamma (affine=False)", op);
  const int hw = s.h * s.w;
  const std::int64_t total = static_cast<std::int64_t>(s.x_size());
  const int chunks = detail::channel_chunks(static_cast<std::int64_t>(s.count()));
  Tensor stats = detail::scratch<double>(2 * static_cast<std::int64_t>(s.c), stream);
  Tensor partial = detail::scratch<double>(2 * static_cast<std::int64_t>(s.c) * chunks, stream);
  Tensor coef = detail::scratch<float>(5 * static_cast<std::int64_t>(s.c), stream);
  double* mean = stats.data<double>();
  double* invstd = mean + s.c;
  const unsigned c_grid = detail::grid_for(s.c);
  backward_stats_kernel<<<c_grid, detail::kBlock, 0, stream>>>(mean_in, invstd_in, running_var, eps, s.c,
                                                               mean, invstd);
  ENGINE_LAUNCH_CHECK();
  detail::launch_channel_partial_sums<2>(stream, s.n, s.c, hw, chunks, GradSums{x, dy, mean, invstd},
                                         partial.data<double>(), op);
  const GradArgs args{partial.data<double>(),
                      chunks,
                      s.c,
                      static_cast<double>(s.count()),
                      batch_terms,
                      mean,
                      invstd,
                      gamma,
                      dgamma,
                      dbeta,
                      coef.data<float>()};
  finish_grad_kernel<<<c_grid, detail::kBlock, 0, stream>>>(args);
  ENGINE_LAUNCH_CHECK();
  if (dx != nullptr) {
    grad_input_kernel<<<detail::grid_for(total), detail::kBlock, 0, stream>>>(x, dy, coef.data<float>(), dx,
                                                                              s.c, hw, total);
    ENGINE_LAUNCH_CHECK();
  }
}

}  // namespace

void batchnorm2d_forward_training(cudaStream_t stream, const BatchNorm2dShape& shape, const float* x,
                                  const float* gamma, const float* beta, float* y, float* save_mean,
                                  float* save_invstd, float* running_mean, float* running_var,
                                  double momentum, double eps) {
  ENGINE_NVTX_RANGE("batchnorm2d_forward_training");
  const char* op = "batchnorm2d_forward_training";
  check_shape(op, shape, eps);
  ENGINE_CHECK(momentum >= 0.0 && momentum <= 1.0, "{}: momentum must lie in [0, 1], got {}", op, momentum);
  ENGINE_CHECK(shape.count() >= 2,
               "{}: expected more than 1 value per channel when training, got input [{}, {}, {}, {}]", op,
               shape.n, shape.c, shape.h, shape.w);
  ENGINE_CHECK(x != nullptr && y != nullptr && save_mean != nullptr && save_invstd != nullptr,
               "{}: x, y, save_mean and save_invstd must not be null", op);
  ENGINE_CHECK((running_mean == nullptr) == (running_var == nullptr),
               "{}: running_mean and running_var must both be given or both be null", op);
  const int hw = shape.h * shape.w;
  const std::int64_t total = static_cast<std::int64_t>(shape.x_size());
  const int chunks = detail::channel_chunks(static_cast<std::int64_t>(shape.count()));
  Tensor partial = detail::scratch<double>(2 * static_cast<std::int64_t>(shape.c) * chunks, stream);
  Tensor coef = detail::scratch<float>(3 * static_cast<std::int64_t>(shape.c), stream);
  detail::launch_channel_partial_sums<2>(stream, shape.n, shape.c, hw, chunks, ShiftedSums{x, hw},
                                         partial.data<double>(), op);
  const StatsArgs args{partial.data<double>(),
                       chunks,
                       shape.c,
                       hw,
                       static_cast<double>(shape.count()),
                       momentum,
                       eps,
                       x,
                       gamma,
                       save_mean,
                       save_invstd,
                       running_mean,
                       running_var,
                       coef.data<float>()};
  finish_stats_kernel<<<detail::grid_for(shape.c), detail::kBlock, 0, stream>>>(args);
  ENGINE_LAUNCH_CHECK();
  normalize_kernel<<<detail::grid_for(total), detail::kBlock, 0, stream>>>(x, coef.data<float>(), beta, y,
                                                                           shape.c, hw, total);
  ENGINE_LAUNCH_CHECK();
}

void batchnorm2d_forward_eval(cudaStream_t stream, const BatchNorm2dShape& shape, const float* x,
                              const float* gamma, const float* beta, const float* running_mean,
                              const float* running_var, float* y, double eps) {
  ENGINE_NVTX_RANGE("batchnorm2d_forward_eval");
  const char* op = "batchnorm2d_forward_eval";
  check_shape(op, shape, eps);
  ENGINE_CHECK(x != nullptr && y != nullptr && running_mean != nullptr && running_var != nullptr,
               "{}: x, y, running_mean and running_var must not be null", op);
  const int hw = shape.h * shape.w;
  const std::int64_t total = static_cast<std::int64_t>(shape.x_size());
  Tensor coef = detail::scratch<float>(3 * static_cast<std::int64_t>(shape.c), stream);
  eval_coefficients_kernel<<<detail::grid_for(shape.c), detail::kBlock, 0, stream>>>(
      gamma, running_mean, running_var, eps, shape.c, coef.data<float>());
  ENGINE_LAUNCH_CHECK();
  normalize_kernel<<<detail::grid_for(total), detail::kBlock, 0, stream>>>(x, coef.data<float>(), beta, y,
                                                                           shape.c, hw, total);
  ENGINE_LAUNCH_CHECK();
}

void batchnorm2d_backward_training(cudaStream_t stream, const BatchNorm2dShape& shape, const float* x,
                                   const float* gamma, const float* save_mean, const float* save_invstd,
                                   const float* dy, float* dx, float* dgamma, float* dbeta) {
  ENGINE_NVTX_RANGE("batchnorm2d_backward_training");
  const char* op = "batchnorm2d_backward_training";
  check_shape(op, shape, 0.0);
  ENGINE_CHECK(save_invstd != nullptr, "{}: save_invstd must not be null", op);
  backward(stream, op, shape, x, gamma, save_mean, save_invstd, nullptr, 0.0, /*batch_terms=*/true, dy, dx,
           dgamma, dbeta);
}

void batchnorm2d_backward_eval(cudaStream_t stream, const BatchNorm2dShape& shape, const float* x,
                               const float* gamma, const float* running_mean, const float* running_var,
                               const float* dy, float* dx, float* dgamma, float* dbeta, double eps) {
  ENGINE_NVTX_RANGE("batchnorm2d_backward_eval");
  const char* op = "batchnorm2d_backward_eval";
  check_shape(op, shape, eps);
  ENGINE_CHECK(running_var != nullptr, "{}: running_var must not be null", op);
  backward(stream, op, shape, x, gamma, running_mean, nullptr, running_var, eps, /*batch_terms=*/false, dy,
           dx, dgamma, dbeta);
}

}  // namespace engine::cuda
