// BatchNorm2d kernels. The statistics and the backward sums are per-channel reductions in double, split
// over a (channel, chunk) grid and finished in a fixed order by the last block of each channel
// (channel_reduce.cuh): deterministic, one kernel. The forward statistics use shifted sums, S1 = sum (x - K),
// S2 = sum (x - K)^2 with K the channel's first value: one read of x, and no E[x^2] - E[x]^2 cancellation
// when |mean| >> std, because the sums are about the data (x - K), not its offset. See batchnorm2d.h for the
// full reasoning. The elementwise passes (normalize, dx; batchnorm_parts.cuh) run in float with per-channel
// coefficients prepared in double, and carry the fused ReLU.
#include <cmath>

#include "kernels/cuda/batchnorm2d.h"
#include "kernels/cuda/batchnorm_nhwc_parts.cuh"
#include "kernels/cuda/batchnorm_parts.cuh"
#include "kernels/cuda/nvtx.h"
#include "kernels/cuda/vector4.cuh"

namespace engine::cuda {
namespace {

using detail::backward_stats_kernel;
using detail::GradSumsOf;
using detail::ShiftedSumsOf;

// ---- forward ----

// The finish of the statistics of channel c from its (S1, S2): save_mean, save_invstd, the running
// statistics, and 3 floats of coefficients for the normalize pass (see normalize_kernel).
template <typename T>
struct FinishStats {
  int hw;  // x[c * hw] is x[0, c, 0, 0]: H*W in NCHW, 1 in NHWC
  double m, momentum, eps;
  const T* x;
  const float* gamma;
  float* save_mean;
  float* save_invstd;
  float* running_mean;
  float* running_var;
  const float* running_mean_shift;  // may be null
  float* coef;

  __device__ void operator()(int c, const double* sums) const {
    const double s1 = sums[0], s2 = sums[1];
    const double shift = static_cast<double>(detail::to_float(x[static_cast<std::int64_t>(c) * hw]));
    const double mean = shift + s1 / m;
    // sum (x - mean)^2 = S2 - S1^2 / M; rounding can make a constant channel's value a tiny negative.
    const double sum_sq = fmax(s2 - s1 * s1 / m, 0.0);
    const double invstd = 1.0 / sqrt(sum_sq / m + eps);
    save_mean[c] = static_cast<float>(mean);
    save_invstd[c] = static_cast<float>(invstd);
    float* k = coef + static_cast<std::int64_t>(c) * 3;
    k[0] = static_cast<float>(shift);   // exact: a value of x
    k[1] = static_cast<float>(s1 / m);  // mean - shift, small next to the data's offset
    k[2] = static_cast<float>((gamma != nullptr ? static_cast<double>(gamma[c]) : 1.0) * invstd);
    if (running_mean != nullptr) {
      const double shifted =
          mean + (running_mean_shift != nullptr ? static_cast<double>(running_mean_shift[c]) : 0.0);
      running_mean[c] =
          static_cast<float>((1.0 - momentum) * static_cast<double>(running_mean[c]) + momentum * shifted);
      running_var[c] = static_cast<float>((1.0 - momentum) * static_cast<double>(running_var[c]) +
                                          momentum * sum_sq / (m - 1.0));
    }
  }
};

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

// The finish of channel c's backward sums: dgamma, dbeta, and the coefficients of
// dx = scale * (dy - mean_dy - xhat * mean_dy_xhat), xhat = (x - mean) * invstd, as 5 floats
// [mean, invstd, scale, mean_dy, mean_dy_xhat].
struct FinishGrad {
  double m;
  bool batch_terms;
  const double* mean;
  const double* invstd;
  const float* gamma;
  float* dgamma;
  float* dbeta;
  float* coef;

  __device__ void operator()(int c, const double* sums) const {
    const double sum_dy = sums[0], sum_dy_xhat = sums[1];
    if (dbeta != nullptr) dbeta[c] = static_cast<float>(sum_dy);
    if (dgamma != nullptr) dgamma[c] = static_cast<float>(sum_dy_xhat);
    float* k = coef + static_cast<std::int64_t>(c) * 5;
    k[0] = static_cast<float>(mean[c]);
    k[1] = static_cast<float>(invstd[c]);
    k[2] = static_cast<float>((gamma != nullptr ? static_cast<double>(gamma[c]) : 1.0) * invstd[c]);
    k[3] = batch_terms ? static_cast<float>(sum_dy / m) : 0.0f;
    k[4] = batch_terms ? static_cast<float>(sum_dy_xhat / m) : 0.0f;
  }
};

void check_shape(const char* op, const BatchNorm2dShape& s, double eps) {
  s.validate();
  ENGINE_CHECK(eps >= 0.0, "{}: eps must not be negative, got {}", op, eps);
  detail::check_fits_int(static_cast<std::int64_t>(s.h) * s.w, "H*W", op);
  detail::check_fits_int(static_cast<std::int64_t>(s.x_size()), "N*C*H*W", op);
}

// The shared backward: training (saved mean/invstd, batch terms) or eval (running stats, no batch terms).
// T: float or __nv_bfloat16 (x, dy, relu_y, dx).
template <typename T>
void backward(cudaStream_t stream, const char* op, const BatchNorm2dShape& s, const T* x, const float* gamma,
              const float* mean_in, const float* invstd_in, const float* running_var, double eps,
              bool batch_terms, const T* dy, const T* relu_y, T* dx, float* dgamma, float* dbeta,
              Layout layout) {
  ENGINE_CHECK(x != nullptr && dy != nullptr && mean_in != nullptr,
               "{}: x, dy and the statistics must not be null", op);
  ENGINE_CHECK(gamma != nullptr || dgamma == nullptr, "{}: dgamma given without gamma (affine=False)", op);
  Tensor stats = detail::scratch<double>(2 * static_cast<std::int64_t>(s.c), stream);
  Tensor coef = detail::scratch<float>(5 * static_cast<std::int64_t>(s.c), stream);
  double* mean = stats.data<double>();
  double* invstd = mean + s.c;
  backward_stats_kernel<<<detail::grid_for(s.c), detail::kBlock, 0, stream>>>(mean_in, invstd_in, running_var,
                                                                              eps, s.c, mean, invstd);
  ENGINE_LAUNCH_CHECK();
  const FinishGrad finish{
      static_cast<double>(s.count()), batch_terms, mean, invstd, gamma, dgamma, dbeta, coef.data<float>()};
  detail::channel_reduce_in_layout(stream, layout, s, GradSumsOf<T>{x, dy, mean, invstd, relu_y}, finish, op);
  if (dx != nullptr) detail::grad_input_in_layout(stream, layout, s, x, dy, relu_y, coef.data<float>(), dx);
}

template <typename T>
void forward_training(cudaStream_t stream, const BatchNorm2dShape& shape, const T* x, const float* gamma,
                      const float* beta, T* y, float* save_mean, float* save_invstd, float* running_mean,
                      float* running_var, double momentum, double eps, bool relu,
                      const float* running_mean_shift, Layout layout) {
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
  const int shift_stride = detail::shift_stride_of(layout, shape);
  Tensor coef = detail::scratch<float>(3 * static_cast<std::int64_t>(shape.c), stream);
  const FinishStats<T> finish{shift_stride,
                              static_cast<double>(shape.count()),
                              momentum,
                              eps,
                              x,
                              gamma,
                              save_mean,
                              save_invstd,
                              running_mean,
                              running_var,
                              running_mean_shift,
                              coef.data<float>()};
  detail::channel_reduce_in_layout(stream, layout, shape, ShiftedSumsOf<T>{x, shift_stride}, finish, op);
  detail::normalize_in_layout(stream, layout, shape, x, coef.data<float>(), beta, y, relu);
}

template <typename T>
void forward_eval(cudaStream_t stream, const BatchNorm2dShape& shape, const T* x, const float* gamma,
                  const float* beta, const float* running_mean, const float* running_var, T* y, double eps,
                  bool relu, Layout layout) {
  const char* op = "batchnorm2d_forward_eval";
  check_shape(op, shape, eps);
  ENGINE_CHECK(x != nullptr && y != nullptr && running_mean != nullptr && running_var != nullptr,
               "{}: x, y, running_mean and running_var must not be null", op);
  Tensor coef = detail::scratch<float>(3 * static_cast<std::int64_t>(shape.c), stream);
  eval_coefficients_kernel<<<detail::grid_for(shape.c), detail::kBlock, 0, stream>>>(
      gamma, running_mean, running_var, eps, shape.c, coef.data<float>());
  ENGINE_LAUNCH_CHECK();
  detail::normalize_in_layout(stream, layout, shape, x, coef.data<float>(), beta, y, relu);
}

template <typename T>
void backward_training(cudaStream_t stream, const BatchNorm2dShape& shape, const T* x, const float* gamma,
                       const float* save_mean, const float* save_invstd, const T* dy, T* dx, float* dgamma,
                       float* dbeta, const T* relu_y, Layout layout) {
  const char* op = "batchnorm2d_backward_training";
  check_shape(op, shape, 0.0);
  ENGINE_CHECK(save_invstd != nullptr, "{}: save_invstd must not be null", op);
  backward(stream, op, shape, x, gamma, save_mean, save_invstd, nullptr, 0.0, /*batch_terms=*/true, dy,
           relu_y, dx, dgamma, dbeta, layout);
}

template <typename T>
void backward_eval(cudaStream_t stream, const BatchNorm2dShape& shape, const T* x, const float* gamma,
                   const float* running_mean, const float* running_var, const T* dy, T* dx, float* dgamma,
                   float* dbeta, double eps, const T* relu_y, Layout layout) {
  const char* op = "batchnorm2d_backward_eval";
  check_shape(op, shape, eps);
  ENGINE_CHECK(running_var != nullptr, "{}: running_var must not be null", op);
  backward(stream, op, shape, x, gamma, running_mean, nullptr, running_var, eps, /*batch_terms=*/false, dy,
           relu_y, dx, dgamma, dbeta, layout);
}

}  // namespace

// The public launchers: float32 and bf16 storage (kernels reinterpret bfloat16 as __nv_bfloat16).
#define ENGINE_BATCHNORM2D_LAUNCHERS(T, SUFFIX)                                                              \
  void batchnorm2d_forward_training(                                                                         \
      cudaStream_t stream, const BatchNorm2dShape& shape, const T* x, const float* gamma, const float* beta, \
      T* y, float* save_mean, float* save_invstd, float* running_mean, float* running_var, double momentum,  \
      double eps, bool relu, const float* running_mean_shift, Layout layout) {                               \
    ENGINE_NVTX_RANGE("batchnorm2d_forward_training" SUFFIX);                                                \
    forward_training(stream, shape, detail::device_ptr(x), gamma, beta, detail::device_ptr(y), save_mean,    \
                     save_invstd, running_mean, running_var, momentum, eps, relu, running_mean_shift,        \
                     layout);                                                                                \
  }                                                                                                          \
  void batchnorm2d_forward_eval(cudaStream_t stream, const BatchNorm2dShape& shape, const T* x,              \
                                const float* gamma, const float* beta, const float* running_mean,            \
                                const float* running_var, T* y, double eps, bool relu, Layout layout) {      \
    ENGINE_NVTX_RANGE("batchnorm2d_forward_eval" SUFFIX);                                                    \
    forward_eval(stream, shape, detail::device_ptr(x), gamma, beta, running_mean, running_var,               \
                 detail::device_ptr(y), eps, relu, layout);                                                  \
  }                                                                                                          \
  void batchnorm2d_backward_training(cudaStream_t stream, const BatchNorm2dShape& shape, const T* x,         \
                                     const float* gamma, const float* save_mean, const float* save_invstd,   \
                                     const T* dy, T* dx, float* dgamma, float* dbeta, const T* relu_y,       \
                                     Layout layout) {                                                        \
    ENGINE_NVTX_RANGE("batchnorm2d_backward_training" SUFFIX);                                               \
    backward_training(stream, shape, detail::device_ptr(x), gamma, save_mean, save_invstd,                   \
                      detail::device_ptr(dy), detail::device_ptr(dx), dgamma, dbeta,                         \
                      detail::device_ptr(relu_y), layout);                                                   \
  }                                                                                                          \
  void batchnorm2d_backward_eval(cudaStream_t stream, const BatchNorm2dShape& shape, const T* x,             \
                                 const float* gamma, const float* running_mean, const float* running_var,    \
                                 const T* dy, T* dx, float* dgamma, float* dbeta, double eps,                \
                                 const T* relu_y, Layout layout) {                                           \
    ENGINE_NVTX_RANGE("batchnorm2d_backward_eval" SUFFIX);                                                   \
    backward_eval(stream, shape, detail::device_ptr(x), gamma, running_mean, running_var,                    \
                  detail::device_ptr(dy), detail::device_ptr(dx), dgamma, dbeta, eps,                        \
                  detail::device_ptr(relu_y), layout);                                                       \
  }

ENGINE_BATCHNORM2D_LAUNCHERS(float, "")
ENGINE_BATCHNORM2D_LAUNCHERS(bfloat16, "_bf16")
#undef ENGINE_BATCHNORM2D_LAUNCHERS

}  // namespace engine::cuda
