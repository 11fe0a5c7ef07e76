// Fused softmax cross-entropy: one warp per row computes the row max, sum exp(z - max), sum z, the argmax
// (the CPU's rule) and, when wanted, the gradient; the row's loss goes to a scratch array in double. One
// block then adds the row losses in a fixed order and writes/accumulates the metrics. No atomics, no host
// synchronization.
#include <cmath>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/nvtx.h"
#include "kernels/cuda/softmax_cross_entropy.h"

namespace engine::cuda {
namespace {

constexpr int kWarpsPerBlock = detail::kBlock / detail::kWarp;

// Candidate (value, index) for the argmax. better(a, b): a NaN beats a number, between two NaNs or two
// equal numbers the lower index wins, else the larger value: a total order whose minimum element is what
// cpu::predict_classes returns (its sequential scan keeps the first NaN, else the first maximum).
struct Best {
  float v;
  int i;
};

__device__ __forceinline__ bool better(Best a, Best b) {
  const bool an = isnan(a.v), bn = isnan(b.v);
  if (an || bn) return an && bn ? a.i < b.i : an;
  return a.v > b.v || (a.v == b.v && a.i < b.i);
}

__device__ __forceinline__ Best warp_best(Best b) {
#pragma unroll
  for (int offset = detail::kWarp / 2; offset > 0; offset /= 2) {
    const Best o{__shfl_xor_sync(0xffffffffu, b.v, offset), __shfl_xor_sync(0xffffffffu, b.i, offset)};
    if (better(o, b)) b = o;
  }
  return b;
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int offset = detail::kWarp / 2; offset > 0; offset /= 2)
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

struct RowArgs {
  const float* logits;
  const std::int32_t* labels;
  int n, k;
  float eps;                // label smoothing
  float grad_scale;         // dloss / n
  float* dlogits;           // may be null
  double* row_loss;         // [n] scratch
  int* row_correct;         // [n] scratch, may be null
  std::int32_t* predicted;  // may be null (predict_classes)
};

// The whole warp handles row `row` (uniform within the warp, so the shuffles see all 32 lanes).
__device__ void softmax_cross_entropy_row(const RowArgs& a, int row, int lane) {
  const float* z = a.logits + static_cast<std::int64_t>(row) * a.k;

  Best best{-INFINITY, a.k};  // index k: "none yet", loses to any real candidate of equal value
  float row_max = -INFINITY, row_sum = 0.0f;
  for (int j = lane; j < a.k; j += detail::kWarp) {
    const float v = z[j];
    if (better(Best{v, j}, best)) best = Best{v, j};
    row_max = fmaxf(row_max, v);  // fmaxf ignores NaN; a NaN row still yields NaN through the sums below
    row_sum += v;
  }
  best = warp_best(best);
  row_max = warp_max(row_max);
  row_sum = detail::warp_sum(row_sum);
  float exp_sum = 0.0f;
  for (int j = lane; j < a.k; j += detail::kWarp) exp_sum += expf(z[j] - row_max);
  exp_sum = detail::warp_sum(exp_sum);

  const int label = a.labels != nullptr ? a.labels[row] : 0;
  const bool label_ok = label >= 0 && label < a.k;
  const float lse = row_max + logf(exp_sum);
  if (lane == 0) {
    if (a.predicted != nullptr) a.predicted[row] = best.i;
    if (a.row_correct != nullptr) a.row_correct[row] = label_ok && best.i == label ? 1 : 0;
    if (a.row_loss != nullptr) {
      const double eps = static_cast<double>(a.eps);
      a.row_loss[row] = label_ok ? static_cast<double>(lse) - (1.0 - eps) * static_cast<double>(z[label]) -
                                       eps / a.k * static_cast<double>(row_sum)
                                 : static_cast<double>(NAN);
    }
  }
  if (a.dlogits != nullptr) {
    float* dz = a.dlogits + static_cast<std::int64_t>(row) * a.k;
    const float smooth = a.eps / static_cast<float>(a.k);
    for (int j = lane; j < a.k; j += detail::kWarp) {
      const float softmax = expf(z[j] - lse);
      const float q = (j == label ? 1.0f - a.eps : 0.0f) + smooth;
      dz[j] = label_ok ? (softmax - q) * a.grad_scale : NAN;
    }
  }
}

__global__ void softmax_cross_entropy_rows_kernel(RowArgs a) {
  const int lane = static_cast<int>(threadIdx.x) % detail::kWarp;
  for (const std::int64_t row : detail::warp_grid_stride(a.n)) {
    softmax_cross_entropy_row(a, static_cast<int>(row), lane);  // row < a.n, an int
  }
}

// One block: the batch's loss sum in double (fixed order), the mean loss, and the accumulations.
__global__ void softmax_cross_entropy_finish_kernel(const double* row_loss, const int* row_correct, int n,
                                                    float* loss, double* loss_sum, std::int64_t* correct,
                                                    float* step_losses, const std::int64_t* loss_slot,
                                                    std::int64_t slots) {
  __shared__ double shared_d[detail::kWarp];
  __shared__ int shared_i[detail::kWarp];
  double sum = 0.0;
  int count = 0;
  for (int i = static_cast<int>(threadIdx.x); i < n; i += static_cast<int>(blockDim.x)) {
    sum += row_loss[i];
    count += row_correct[i];
  }
  sum = detail::block_sum(sum, shared_d);
  count = detail::block_sum(count, shared_i);
  if (threadIdx.x == 0) {
    if (loss != nullptr) *loss = static_cast<float>(sum / n);
    if (step_losses != nullptr) {
      const std::int64_t slot = *loss_slot;
      if (slot >= 0 && slot < slots) step_losses[slot] = static_cast<float>(sum / n);
    }
    if (loss_sum != nullptr) *loss_sum += sum;
    if (correct != nullptr) *correct += count;
  }
}

}  // namespace

void softmax_cross_entropy(cudaStream_t stream, const float* logits, const std::int32_t* labels, int n, int k,
                           double label_smoothing, float* loss, float* dlogits, double* loss_sum,
                           std::int64_t* correct, double dloss, float* step_losses,
                           const std::int64_t* loss_slot, std::int64_t slots) {
  ENGINE_NVTX_RANGE("softmax_cross_entropy");
  ENGINE_CHECK(n > 0 && k > 0,
               "softmax_cross_entropy: batch size and class count must be positive, got n={} k={}", n, k);
  ENGINE_CHECK(label_smoothing >= 0.0 && label_smoothing < 1.0,
               "softmax_cross_entropy: label_smoothing must be in [0, 1), got {}", label_smoothing);
  ENGINE_CHECK(logits != nullptr && labels != nullptr, "softmax_cross_entropy: null logits or labels");
  detail::check_fits_int(static_cast<std::int64_t>(n) * k, "n*k", "softmax_cross_entropy");
  ENGINE_CHECK(step_losses == nullptr || (loss_slot != nullptr && slots > 0),
               "softmax_cross_entropy: step losses need a slot address and a positive count, got {}", slots);
  Tensor row_loss = detail::scratch<double>(n, stream);
  Tensor row_correct = detail::scratch<std::int32_t>(n, stream);
  const RowArgs args{logits,
                     labels,
                     n,
                     k,
                     static_cast<float>(label_smoothing),
                     static_cast<float>(dloss / n),
                     dlogits,
                     row_loss.data<double>(),
                     row_correct.data<std::int32_t>(),
                     nullptr};
  softmax_cross_entropy_rows_kernel<<<detail::grid_for(n, kWarpsPerBlock), detail::kBlock, 0, stream>>>(args);
  ENGINE_LAUNCH_CHECK();
  softmax_cross_entropy_finish_kernel<<<1, 1024, 0, stream>>>(
      row_loss.data<double>(), row_correct.data<std::int32_t>(), n, loss, loss_sum, correct, step_losses,
      loss_slot, slots);
  ENGINE_LAUNCH_CHECK();
}

void predict_classes(cudaStream_t stream, const float* logits, int n, int k, std::int32_t* predicted) {
  ENGINE_NVTX_RANGE("predict_classes");
  ENGINE_CHECK(n > 0 && k > 0, "predict_classes: batch size and class count must be positive, got n={} k={}",
               n, k);
  ENGINE_CHECK(logits != nullptr && predicted != nullptr, "predict_classes: null pointer");
  detail::check_fits_int(static_cast<std::int64_t>(n) * k, "n*k", "predict_classes");
  const RowArgs args{logits, nullptr, n, k, 0.0f, 0.0f, nullptr, nullptr, nullptr, predicted};
  softmax_cross_entropy_rows_kernel<<<detail::grid_for(n, kWarpsPerBlock), detail::kBlock, 0, stream>>>(args);
  ENGINE_LAUNCH_CHECK();
}

}  // namespace engine::cuda
