// SyncBatchNorm's device stages (sync_batchnorm.h). The reductions and elementwise passes are BatchNorm2d's
// (channel_reduce.cuh / channel_reduce_nhwc.cuh, batchnorm_parts.cuh / batchnorm_nhwc_parts.cuh), in the
// layout of the tensors; what is new here is the per-channel finishing: local moments out, global moments in.
#include <cmath>

#include "kernels/cuda/batchnorm_nhwc_parts.cuh"
#include "kernels/cuda/nvtx.h"
#include "kernels/cuda/sync_batchnorm.h"

namespace engine::cuda {
namespace {

// The finish of the local statistics of channel c from its shifted sums (S1, S2) about K:
// local = [count, mean[C], M2[C]].
struct FinishLocalMoments {
  int shift_stride, c_count;
  double m;
  const float* x;
  double* local;

  __device__ void operator()(int c, const double* sums) const {
    const double s1 = sums[0], s2 = sums[1];
    const double shift = static_cast<double>(x[static_cast<std::int64_t>(c) * shift_stride]);
    if (c == 0) local[0] = m;
    local[1 + c] = shift + s1 / m;
    local[1 + c_count + c] = fmax(s2 - s1 * s1 / m, 0.0);  // rounding can make a constant channel's tiny < 0
  }
};

struct ForwardArgs {
  const double* gathered;
  int world_size, c_count, shift_stride;
  double momentum, eps;
  const float* x;
  const float* gamma;
  float* save_mean;
  float* save_invstd;
  float* running_mean;
  float* running_var;
  float* coef;  // [shift, mean - shift, scale] per channel, for normalize_kernel
};

// Chan et al.'s pairwise combination in rank order, as dist/sync_batchnorm.cpp's host path does.
__global__ void forward_global_kernel(ForwardArgs a) {
  const int c = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (c >= a.c_count) return;
  const std::int64_t stride = 1 + 2 * static_cast<std::int64_t>(a.c_count);
  double count = 0.0, mean = 0.0, m2 = 0.0;
  for (int r = 0; r < a.world_size; ++r) {
    const double* s = a.gathered + r * stride;
    const double nb = s[0];
    if (nb <= 0.0) continue;
    const double nab = count + nb;
    const double delta = s[1 + c] - mean;
    mean += delta * nb / nab;
    m2 += s[1 + a.c_count + c] + delta * delta * count * nb / nab;
    count = nab;
  }
  const double invstd = 1.0 / sqrt(m2 / count + a.eps);
  a.save_mean[c] = static_cast<float>(mean);
  a.save_invstd[c] = static_cast<float>(invstd);
  // Normalize about this rank's first value of the channel, as BatchNorm2d does (batchnorm_parts.cuh).
  const double shift = static_cast<double>(a.x[static_cast<std::int64_t>(c) * a.shift_stride]);
  float* k = a.coef + static_cast<std::int64_t>(c) * 3;
  k[0] = static_cast<float>(shift);
  k[1] = static_cast<float>(mean - shift);
  k[2] = static_cast<float>((a.gamma != nullptr ? static_cast<double>(a.gamma[c]) : 1.0) * invstd);
  if (a.running_mean != nullptr) {
    a.running_mean[c] =
        static_cast<float>((1.0 - a.momentum) * static_cast<double>(a.running_mean[c]) + a.momentum * mean);
    a.running_var[c] = static_cast<float>((1.0 - a.momentum) * static_cast<double>(a.running_var[c]) +
                                          a.momentum * m2 / (count - 1.0));
  }
}

// The finish of channel c's backward sums over this rank's share: local = [sum_dy[C], sum_dy_xhat[C], count];
// dgamma, dbeta = these local sums.
struct FinishLocalGradSums {
  int c_count;
  double m;
  double* local;
  float* dgamma;
  float* dbeta;

  __device__ void operator()(int c, const double* sums) const {
    const double sum_dy = sums[0], sum_dy_xhat = sums[1];
    local[c] = sum_dy;
    local[c_count + c] = sum_dy_xhat;
    if (c == 0) local[2 * c_count] = m;
    if (dbeta != nullptr) dbeta[c] = static_cast<float>(sum_dy);
    if (dgamma != nullptr) dgamma[c] = static_cast<float>(sum_dy_xhat);
  }
};

// coef = [mean, invstd, scale, mean_dy, mean_dy_xhat] per channel from the global sums (grad_input_kernel).
__global__ void backward_global_coef_kernel(const double* reduced, int c_count, const float* gamma,
                                            const float* save_mean, const float* save_invstd, float* coef) {
  const int c = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (c >= c_count) return;
  const double count = reduced[2 * c_count];
  const double invstd = static_cast<double>(save_invstd[c]);
  float* k = coef + static_cast<std::int64_t>(c) * 5;
  k[0] = save_mean[c];
  k[1] = save_invstd[c];
  k[2] = static_cast<float>((gamma != nullptr ? static_cast<double>(gamma[c]) : 1.0) * invstd);
  k[3] = static_cast<float>(reduced[c] / count);
  k[4] = static_cast<float>(reduced[c_count + c] / count);
}

void check(const char* op, const BatchNorm2dShape& s) {
  s.validate();
  ENGINE_CHECK(s.count() >= 2,
               "{}: each rank needs at least 2 values per channel, got an input [{}, {}, {}, {}]", op, s.n,
               s.c, s.h, s.w);
  detail::check_fits_int(static_cast<std::int64_t>(s.h) * s.w, "H*W", op);
  detail::check_fits_int(static_cast<std::int64_t>(s.x_size()), "N*C*H*W", op);
}

}  // namespace

void sync_batchnorm_local_moments(cudaStream_t stream, const BatchNorm2dShape& shape, const float* x,
                                  double* local, Layout layout) {
  ENGINE_NVTX_RANGE("sync_batchnorm_local_moments");
  const char* op = "sync_batchnorm_local_moments";
  check(op, shape);
  ENGINE_CHECK(x != nullptr && local != nullptr, "{}: x and local must not be null", op);
  const int shift_stride = detail::shift_stride_of(layout, shape);
  const FinishLocalMoments finish{shift_stride, shape.c, static_cast<double>(shape.count()), x, local};
  detail::channel_reduce_in_layout(stream, layout, shape, detail::ShiftedSums{x, shift_stride}, finish, op);
}

void sync_batchnorm_forward_global(cudaStream_t stream, const BatchNorm2dShape& shape, const double* gathered,
                                   int world_size, const float* x, const float* gamma, const float* beta,
                                   float* y, float* save_mean, float* save_invstd, float* running_mean,
                                   float* running_var, double momentum, double eps, Layout layout) {
  ENGINE_NVTX_RANGE("sync_batchnorm_forward_global");
  const char* op = "sync_batchnorm_forward_global";
  check(op, shape);
  ENGINE_CHECK(world_size >= 1, "{}: world size {} must be at least 1", op, world_size);
  ENGINE_CHECK(
      gathered != nullptr && x != nullptr && y != nullptr && save_mean != nullptr && save_invstd != nullptr,
      "{}: gathered, x, y, save_mean and save_invstd must not be null", op);
  ENGINE_CHECK((running_mean == nullptr) == (running_var == nullptr),
               "{}: running_mean and running_var must both be given or both be null", op);
  ENGINE_CHECK(momentum >= 0.0 && momentum <= 1.0 && eps >= 0.0, "{}: momentum {} or eps {} out of range", op,
               momentum, eps);
  Tensor coef = detail::scratch<float>(3 * static_cast<std::int64_t>(shape.c), stream);
  const ForwardArgs args{gathered,
                         world_size,
                         shape.c,
                         detail::shift_stride_of(layout, shape),
                         momentum,
                         eps,
                         x,
                         gamma,
                         save_mean,
                         save_invstd,
                         running_mean,
                         running_var,
                         coef.data<float>()};
  forward_global_kernel<<<detail::grid_for(shape.c), detail::kBlock, 0, stream>>>(args);
  ENGINE_LAUNCH_CHECK();
  detail::normalize_in_layout(stream, layout, shape, x, coef.data<float>(), beta, y, /*relu=*/false);
}

void sync_batchnorm_local_grad_sums(cudaStream_t stream, const BatchNorm2dShape& shape, const float* x,
                                    const float* dy, const float* save_mean, const float* save_invstd,
                                    double* local, float* dgamma, float* dbeta, Layout layout) {
  ENGINE_NVTX_RANGE("sync_batchnorm_local_grad_sums");
  const char* op = "sync_batchnorm_local_grad_sums";
  check(op, shape);
  ENGINE_CHECK(
      x != nullptr && dy != nullptr && save_mean != nullptr && save_invstd != nullptr && local != nullptr,
      "{}: x, dy, save_mean, save_invstd and local must not be null", op);
  Tensor stats = detail::scratch<double>(2 * static_cast<std::int64_t>(shape.c), stream);
  double* mean = stats.data<double>();
  double* invstd = mean + shape.c;
  detail::backward_stats_kernel<<<detail::grid_for(shape.c), detail::kBlock, 0, stream>>>(
      save_mean, save_invstd, nullptr, 0.0, shape.c, mean, invstd);
  ENGINE_LAUNCH_CHECK();
  const FinishLocalGradSums finish{shape.c, static_cast<double>(shape.count()), local, dgamma, dbeta};
  detail::channel_reduce_in_layout(stream, layout, shape, detail::GradSums{x, dy, mean, invstd}, finish, op);
}

void sync_batchnorm_backward_global(cudaStream_t stream, const BatchNorm2dShape& shape, const double* reduced,
                                    const float* x, const float* gamma, const float* save_mean,
                                    const float* save_invstd, const float* dy, float* dx, Layout layout) {
  ENGINE_NVTX_RANGE("sync_batchnorm_backward_global");
  const char* op = "sync_batchnorm_backward_global";
  check(op, shape);
  if (dx == nullptr) return;
  ENGINE_CHECK(
      reduced != nullptr && x != nullptr && dy != nullptr && save_mean != nullptr && save_invstd != nullptr,
      "{}: reduced, x, dy, save_mean and save_invstd must not be null", op);
  Tensor coef = detail::scratch<float>(5 * static_cast<std::int64_t>(shape.c), stream);
  backward_global_coef_kernel<<<detail::grid_for(shape.c), detail::kBlock, 0, stream>>>(
      reduced, shape.c, gamma, save_mean, save_invstd, coef.data<float>());
  ENGINE_LAUNCH_CHECK();
  detail::grad_input_in_layout(stream, layout, shape, x, dy, /*relu_y=*/nullptr, coef.data<float>(), dx);
}

}  // namespace engine::cuda
