// Bias add and bias gradient kernels. The gradients accumulate in double in a fixed order (see
// channel_reduce.cuh for NCHW; a column-tile kernel for rows), so they are deterministic and differ from the
// float64 reference by the final rounding plus double-order effects far below it.
#include "kernels/cuda/bias.h"
#include "kernels/cuda/channel_reduce.cuh"
#include "kernels/cuda/channel_reduce_nhwc.cuh"
#include "kernels/cuda/nvtx.h"
#include "kernels/cuda/vector4.cuh"

namespace engine::cuda {
namespace {

// The bias as the storage type sees it: itself for float32 data, its bf16 rounding for bf16 data (autocast
// casts the bias to bf16 with the other operands).
template <typename T>
__device__ __forceinline__ float bias_value(float b) {
  return detail::to_float(detail::from_float<T>(b));
}

// T: float or __nv_bfloat16 (vector4.cuh); the sum is formed in float and stored once.
template <typename T>
__global__ void bias_add_nchw_kernel(T* y, const float* bias, int c, int hw, std::int64_t total) {
  for (const std::int64_t i : detail::grid_stride(total)) {
    y[i] = detail::from_float<T>(detail::to_float(y[i]) + bias_value<T>(bias[(i / hw) % c]));
  }
}

template <typename T>
__global__ void bias_add_rows_kernel(T* y, const float* bias, int cols, std::int64_t total) {
  for (const std::int64_t i : detail::grid_stride(total)) {
    y[i] = detail::from_float<T>(detail::to_float(y[i]) + bias_value<T>(bias[i % cols]));
  }
}

template <typename T>
struct SumDy {
  const T* dy;
  __device__ void operator()(std::int64_t offset, int /*c*/, double* acc) const {
    acc[0] += static_cast<double>(detail::to_float(dy[offset]));
  }
};

struct WriteBiasGrad {
  float* db;
  __device__ void operator()(int c, const double* sums) const { db[c] = static_cast<float>(sums[0]); }
};

// Column sums of a row-major [rows, cols] matrix: block (32, 8) owns 32 columns; thread row ty sums rows
// ty, ty+8, ... of its column, then the 8 partials are added in order.
constexpr int kColTile = 32, kRowThreads = 8;

template <typename T>
__global__ void bias_grad_rows_kernel(const T* dy, float* db, int rows, int cols) {
  __shared__ double partial[kRowThreads][kColTile];
  const int col = static_cast<int>(blockIdx.x) * kColTile + static_cast<int>(threadIdx.x);
  double sum = 0.0;
  if (col < cols) {
    for (int r = static_cast<int>(threadIdx.y); r < rows; r += kRowThreads) {
      sum += static_cast<double>(detail::to_float(dy[static_cast<std::int64_t>(r) * cols + col]));
    }
  }
  partial[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.y == 0 && col < cols) {
    double total = 0.0;
    for (int t = 0; t < kRowThreads; ++t) total += partial[t][threadIdx.x];
    db[col] = static_cast<float>(total);
  }
}

void check_nchw(const char* op, int n, int c, int hw) {
  ENGINE_CHECK(n > 0 && c > 0 && hw > 0, "{}: sizes must be positive, got n={} c={} hw={}", op, n, c, hw);
}

template <typename T>
void bias_add_nchw_impl(cudaStream_t stream, T* y, const float* bias, int n, int c, int hw) {
  check_nchw("bias_add_nchw", n, c, hw);
  ENGINE_CHECK(y != nullptr && bias != nullptr, "bias_add_nchw: null pointer");
  const std::int64_t total = static_cast<std::int64_t>(n) * c * hw;
  bias_add_nchw_kernel<<<detail::grid_for(total), detail::kBlock, 0, stream>>>(detail::device_ptr(y), bias, c,
                                                                               hw, total);
  ENGINE_LAUNCH_CHECK();
}

template <typename T>
void bias_grad_nchw_impl(cudaStream_t stream, const T* dy, float* db, int n, int c, int hw) {
  check_nchw("bias_grad_nchw", n, c, hw);
  ENGINE_CHECK(dy != nullptr && db != nullptr, "bias_grad_nchw: null pointer");
  detail::launch_channel_reduce<1>(
      stream, n, c, hw, detail::channel_chunks(static_cast<std::int64_t>(n) * hw),
      SumDy<detail::device_t<T>>{detail::device_ptr(dy)}, WriteBiasGrad{db}, "bias_grad_nchw");
}

template <typename T>
void bias_add_rows_impl(cudaStream_t stream, T* y, const float* bias, int rows, int cols) {
  ENGINE_CHECK(rows > 0 && cols > 0, "bias_add_rows: sizes must be positive, got rows={} cols={}", rows,
               cols);
  ENGINE_CHECK(y != nullptr && bias != nullptr, "bias_add_rows: null pointer");
  const std::int64_t total = static_cast<std::int64_t>(rows) * cols;
  bias_add_rows_kernel<<<detail::grid_for(total), detail::kBlock, 0, stream>>>(detail::device_ptr(y), bias,
                                                                               cols, total);
  ENGINE_LAUNCH_CHECK();
}

template <typename T>
void bias_grad_rows_impl(cudaStream_t stream, const T* dy, float* db, int rows, int cols) {
  ENGINE_CHECK(rows > 0 && cols > 0, "bias_grad_rows: sizes must be positive, got rows={} cols={}", rows,
               cols);
  ENGINE_CHECK(dy != nullptr && db != nullptr, "bias_grad_rows: null pointer");
  const dim3 block(kColTile, kRowThreads);
  const dim3 grid(static_cast<unsigned>(detail::ceil_div(cols, kColTile)));
  bias_grad_rows_kernel<<<grid, block, 0, stream>>>(detail::device_ptr(dy), db, rows, cols);
  ENGINE_LAUNCH_CHECK();
}

template <typename T>
void bias_grad_nhwc_impl(cudaStream_t stream, const T* dy, float* db, std::int64_t rows, int c) {
  ENGINE_CHECK(rows > 0 && c > 0, "bias_grad_nhwc: sizes must be positive, got rows={} c={}", rows, c);
  ENGINE_CHECK(dy != nullptr && db != nullptr, "bias_grad_nhwc: null pointer");
  detail::launch_channel_reduce_nhwc<1>(stream, rows, c, SumDy<detail::device_t<T>>{detail::device_ptr(dy)},
                                        WriteBiasGrad{db}, "bias_grad_nhwc");
}

}  // namespace

void bias_add_nchw(cudaStream_t stream, float* y, const float* bias, int n, int c, int hw) {
  ENGINE_NVTX_RANGE("bias_add_nchw");
  bias_add_nchw_impl(stream, y, bias, n, c, hw);
}
void bias_add_nchw(cudaStream_t stream, bfloat16* y, const float* bias, int n, int c, int hw) {
  ENGINE_NVTX_RANGE("bias_add_nchw_bf16");
  bias_add_nchw_impl(stream, y, bias, n, c, hw);
}
void bias_grad_nchw(cudaStream_t stream, const float* dy, float* db, int n, int c, int hw) {
  ENGINE_NVTX_RANGE("bias_grad_nchw");
  bias_grad_nchw_impl(stream, dy, db, n, c, hw);
}
void bias_grad_nchw(cudaStream_t stream, const bfloat16* dy, float* db, int n, int c, int hw) {
  ENGINE_NVTX_RANGE("bias_grad_nchw_bf16");
  bias_grad_nchw_impl(stream, dy, db, n, c, hw);
}
void bias_add_rows(cudaStream_t stream, float* y, const float* bias, int rows, int cols) {
  ENGINE_NVTX_RANGE("bias_add_rows");
  bias_add_rows_impl(stream, y, bias, rows, cols);
}
void bias_add_rows(cudaStream_t stream, bfloat16* y, const float* bias, int rows, int cols) {
  ENGINE_NVTX_RANGE("bias_add_rows_bf16");
  bias_add_rows_impl(stream, y, bias, rows, cols);
}
void bias_grad_rows(cudaStream_t stream, const float* dy, float* db, int rows, int cols) {
  ENGINE_NVTX_RANGE("bias_grad_rows");
  bias_grad_rows_impl(stream, dy, db, rows, cols);
}
void bias_grad_rows(cudaStream_t stream, const bfloat16* dy, float* db, int rows, int cols) {
  ENGINE_NVTX_RANGE("bias_grad_rows_bf16");
  bias_grad_rows_impl(stream, dy, db, rows, cols);
}

void bias_grad_nhwc(cudaStream_t stream, const float* dy, float* db, std::int64_t rows, int c) {
  ENGINE_NVTX_RANGE("bias_grad_nhwc");
  bias_grad_nhwc_impl(stream, dy, db, rows, c);
}
void bias_grad_nhwc(cudaStream_t stream, const bfloat16* dy, float* db, std::int64_t rows, int c) {
  ENGINE_NVTX_RANGE("bias_grad_nhwc_bf16");
  bias_grad_nhwc_impl(stream, dy, db, rows, c);
}

}  // namespace engine::cuda
