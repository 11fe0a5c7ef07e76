// The implicit-GEMM convolution: one tiled kernel, instantiated for the three passes with
// different operand loaders (see conv2d_implicit_gemm.h for the three GEMMs).
//
// Tiling: a block of 256 threads computes a 64 x 64 tile of C = A . B, stepping through the reduction in
// slices of 16. Each slice of A (64 x 16) and B (16 x 64) is gathered from global memory into shared memory
// (zeros outside the matrix, the padding, and the stride gaps), then every thread accumulates its 4 x 4
// outputs (rows ty + 16 i, columns tx + 16 j) with fp32 FMAs. The loaders compute addresses from the GEMM
// indices on the fly (no im2col buffer). A B-loader splits its column index once per thread (`column`),
// since a thread loads the same column for every slice.
//
// Backward filter reduces over N*P*Q, long while its output is small, so its reduction is split across
// gridDim.z blocks (split-K); each split writes a partial tile and a second kernel adds the partials in
// increasing split order. Deterministic: no atomics anywhere.
#include "kernels/cuda/bias.h"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/conv2d_implicit_gemm.h"
#include "kernels/cuda/nvtx.h"

namespace engine::cuda {
namespace {

constexpr int kTileM = 64, kTileN = 64, kTileK = 16, kThreads = 256;
static_assert(kTileM * kTileK == 4 * kThreads && kTileN * kTileK == 4 * kThreads,
              "each thread loads 4 elements of A and 4 of B per slice");
static_assert(kThreads == 16 * 16 && kTileM == 4 * 16 && kTileN == 4 * 16,
              "16 x 16 threads, 4 x 4 outputs each");

struct Geometry {
  int n, c, h, w, k, r, s, p, q, sh, sw, ph, pw;
};

Geometry geometry_of(const Conv2dShape& g) {
  return {g.n, g.c, g.h, g.w, g.k, g.r, g.s, g.p(), g.q(), g.stride_h, g.stride_w, g.pad_h, g.pad_w};
}

template <typename ALoad, typename BLoad, typename Store>
__global__ void __launch_bounds__(kThreads)
    implicit_gemm_kernel(int m_size, int n_size, int k_size, int k_per_split, ALoad a, BLoad b, Store store) {
  __shared__ float a_tile[kTileK][kTileM + 4];  // +4: the transposed stores below hit fewer banks twice
  __shared__ float b_tile[kTileK][kTileN];
  const int tid = static_cast<int>(threadIdx.x);
  const int tx = tid % 16, ty = tid / 16;
  const int m0 = static_cast<int>(blockIdx.y) * kTileM;
  const int n0 = static_cast<int>(blockIdx.x) * kTileN;
  const int split = static_cast<int>(blockIdx.z);
  const int k_begin = split * k_per_split;
  const int k_end = min(k_size, k_begin + k_per_split);

  // Load roles: A element (a_row + 16 l, a_k) -- consecutive threads read consecutive k, which is the
  // contiguous direction of every A operand here; B element (b_k + 4 l, b_col) -- consecutive columns.
  const int a_k = tid % kTileK, a_row = tid / kTileK;
  const int b_col = tid % kTileN, b_k = tid / kTileN;
  const int col = n0 + b_col;
  const bool col_ok = col < n_size;
  const typename BLoad::Column column = b.column(col_ok ? col : 0);

  float acc[4][4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
#pragma unroll
    for (int j = 0; j < 4; ++j) acc[i][j] = 0.0f;
  }

  for (int k0 = k_begin; k0 < k_end; k0 += kTileK) {
#pragma unroll
    for (int l = 0; l < 4; ++l) {
      const int row = m0 + a_row + 16 * l;
      const int kk = k0 + a_k;
      a_tile[a_k][a_row + 16 * l] = (row < m_size && kk < k_end) ? a(row, kk) : 0.0f;
    }
#pragma unroll
    for (int l = 0; l < 4; ++l) {
      const int kk = k0 + b_k + 4 * l;
      b_tile[b_k + 4 * l][b_col] = (col_ok && kk < k_end) ? b(column, kk) : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kTileK; ++kk) {
      float a_frag[4], b_frag[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) a_frag[i] = a_tile[kk][ty + 16 * i];
#pragma unroll
      for (int j = 0; j < 4; ++j) b_frag[j] = b_tile[kk][tx + 16 * j];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(a_frag[i], b_frag[j], acc[i][j]);
      }
    }
    __syncthreads();
  }

#pragma unroll
  for (int i = 0; i < 4; ++i) {
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int row = m0 + ty + 16 * i, out_col = n0 + tx + 16 * j;
      if (row < m_size && out_col < n_size) store(row, out_col, split, acc[i][j]);
    }
  }
}

// ---- forward: y [K x NPQ] = W [K x CRS] . im2col(x) [CRS x NPQ] ----

struct WeightRows {  // A(k, crs) = w[k, crs]
  const float* w;
  int crs;
  __device__ float operator()(int row, int kk) const { return w[static_cast<std::int64_t>(row) * crs + kk]; }
};

struct Im2colColumns {  // B(crs, npq) = x[n, c, p*sh - ph + r, q*sw - pw + s], zero in the padding
  const float* x;
  Geometry g;
  struct Column {
    int n, ih0, iw0;
  };
  __device__ Column column(int col) const {
    const int pq = col % (g.p * g.q);
    return {col / (g.p * g.q), (pq / g.q) * g.sh - g.ph, (pq % g.q) * g.sw - g.pw};
  }
  __device__ float operator()(const Column& col, int kk) const {
    const int rs = kk % (g.r * g.s);
    const int c = kk / (g.r * g.s);
    const int ih = col.ih0 + rs / g.s, iw = col.iw0 + rs % g.s;
    if (ih < 0 || ih >= g.h || iw < 0 || iw >= g.w) return 0.0f;
    return x[((static_cast<std::int64_t>(col.n) * g.c + c) * g.h + ih) * g.w + iw];
  }
};

struct ForwardStore {  // y[n, k, p, q] = acc + bias[k]
  float* y;
  const float* bias;
  int k, pq;
  __device__ void operator()(int row, int col, int /*split*/, float v) const {
    const int n = col / pq;
    y[(static_cast<std::int64_t>(n) * k + row) * pq + col % pq] = bias != nullptr ? v + bias[row] : v;
  }
};

// ---- backward data: dx [C x NHW] = W^T [C x KRS] . gather(dy) [KRS x NHW] ----

struct WeightColumnsAsRows {  // A(c, krs) = w[k, c, r, s]
  const float* w;
  int c, rs;
  __device__ float operator()(int row, int kk) const {
    const int k = kk / rs;
    return w[(static_cast<std::int64_t>(k) * c + row) * rs + kk % rs];
  }
};

// B(krs, nhw) = dy[n, k, p, q] where p*sh - ph + r = i and q*sw - pw + s = j, else 0 (the transposed conv).
struct GradOutputColumns {
  const float* dy;
  Geometry g;
  struct Column {
    int n, i, j;
  };
  __device__ Column column(int col) const {
    const int hw = col % (g.h * g.w);
    return {col / (g.h * g.w), hw / g.w, hw % g.w};
  }
  __device__ float operator()(const Column& col, int kk) const {
    const int rs = kk % (g.r * g.s);
    const int k = kk / (g.r * g.s);
    const int th = col.i + g.ph - rs / g.s, tw = col.j + g.pw - rs % g.s;  // = p*sh, q*sw
    if (th < 0 || tw < 0 || th % g.sh != 0 || tw % g.sw != 0) return 0.0f;
    const int p = th / g.sh, q = tw / g.sw;
    if (p >= g.p || q >= g.q) return 0.0f;
    return dy[((static_cast<std::int64_t>(col.n) * g.k + k) * g.p + p) * g.q + q];
  }
};

struct DataStore {  // dx[n, c, i, j] = acc
  float* dx;
  int c, hw;
  __device__ void operator()(int row, int col, int /*split*/, float v) const {
    const int n = col / hw;
    dx[(static_cast<std::int64_t>(n) * c + row) * hw + col % hw] = v;
  }
};

// ---- backward filter: dW [K x CRS] = dy [K x NPQ] . im2col(x)^T [NPQ x CRS] ----

struct GradOutputRows {  // A(k, npq) = dy[n, k, p, q]
  const float* dy;
  int k, pq;
  __device__ float operator()(int row, int kk) const {
    const int n = kk / pq;
    return dy[(static_cast<std::int64_t>(n) * k + row) * pq + kk % pq];
  }
};

struct Im2colRows {  // B(npq, crs) = x[n, c, p*sh - ph + r, q*sw - pw + s]
  const float* x;
  Geometry g;
  struct Column {
    int c, r, s;
  };
  __device__ Column column(int col) const {
    const int rs = col % (g.r * g.s);
    return {col / (g.r * g.s), rs / g.s, rs % g.s};
  }
  __device__ float operator()(const Column& col, int kk) const {
    const int pq = kk % (g.p * g.q);
    const int n = kk / (g.p * g.q);
    const int ih = (pq / g.q) * g.sh - g.ph + col.r, iw = (pq % g.q) * g.sw - g.pw + col.s;
    if (ih < 0 || ih >= g.h || iw < 0 || iw >= g.w) return 0.0f;
    return x[((static_cast<std::int64_t>(n) * g.c + col.c) * g.h + ih) * g.w + iw];
  }
};

struct SplitStore {  // out[split][row][col]; with one split, out is dW itself
  float* out;
  int m_size, n_size;
  __device__ void operator()(int row, int col, int split, float v) const {
    out[(static_cast<std::int64_t>(split) * m_size + row) * n_size + col] = v;
  }
};

__global__ void sum_splits_kernel(const float* partial, int splits, std::int64_t size, float* out) {
  for (const std::int64_t i : detail::grid_stride(size)) {
    float sum = 0.0f;
    for (int s = 0; s < splits; ++s) sum += partial[s * size + i];
    out[i] = sum;
  }
}

template <typename ALoad, typename BLoad, typename Store>
void launch_gemm(cudaStream_t stream, int m_size, int n_size, int k_size, int splits, int k_per_split,
                 const ALoad& a, const BLoad& b, const Store& store) {
  const dim3 grid(static_cast<unsigned>(detail::ceil_div(n_size, kTileN)),
                  static_cast<unsigned>(detail::ceil_div(m_size, kTileM)), static_cast<unsigned>(splits));
  implicit_gemm_kernel<<<grid, kThreads, 0, stream>>>(m_size, n_size, k_size, k_per_split, a, b, store);
  ENGINE_LAUNCH_CHECK();
}

// Every index the kernels form fits in int: the tensors, and the GEMM dimensions.
void check_sizes(const Conv2dShape& s, const char* op) {
  s.validate();
  ENGINE_CHECK(s.dense(),
               "{}: groups {} and dilation ({}, {}) are cuDNN's only: the implicit-GEMM convolution is dense "
               "(kernels/ops/conv2d.cpp sends such shapes to cuDNN)",
               op, s.groups, s.dilation_h, s.dilation_w);
  detail::check_fits_int(static_cast<std::int64_t>(s.x_size()), "N*C*H*W", op);
  detail::check_fits_int(static_cast<std::int64_t>(s.w_size()), "K*C*R*S", op);
  detail::check_fits_int(static_cast<std::int64_t>(s.y_size()), "N*K*P*Q", op);
  ENGINE_CHECK(detail::ceil_div(std::max(s.k, s.c), kTileM) <= 65535, "{}: {} channels exceed the grid", op,
               std::max(s.k, s.c));
}

}  // namespace

void conv2d_forward_implicit_gemm(cudaStream_t stream, const Conv2dShape& shape, const float* x,
                                  const float* w, const float* bias, float* y) {
  ENGINE_NVTX_RANGE("conv2d_forward_implicit_gemm");
  const char* op = "conv2d_forward_implicit_gemm";
  check_sizes(shape, op);
  ENGINE_CHECK(x != nullptr && w != nullptr && y != nullptr, "{}: x, w and y must not be null", op);
  const Geometry g = geometry_of(shape);
  const int crs = g.c * g.r * g.s, pq = g.p * g.q;
  launch_gemm(stream, g.k, g.n * pq, crs, 1, crs, WeightRows{w, crs}, Im2colColumns{x, g},
              ForwardStore{y, bias, g.k, pq});
}

void conv2d_backward_implicit_gemm(cudaStream_t stream, const Conv2dShape& shape, const float* x,
                                   const float* w, const float* dy, float* dx, float* dw, float* db) {
  ENGINE_NVTX_RANGE("conv2d_backward_implicit_gemm");
  const char* op = "conv2d_backward_implicit_gemm";
  check_sizes(shape, op);
  ENGINE_CHECK(x != nullptr && w != nullptr && dy != nullptr && dw != nullptr,
               "{}: x, w, dy and dw must not be null", op);
  const Geometry g = geometry_of(shape);
  const int rs = g.r * g.s, crs = g.c * rs, pq = g.p * g.q, hw = g.h * g.w;
  if (db != nullptr) bias_grad_nchw(stream, dy, db, g.n, g.k, pq);
  if (dx != nullptr) {
    launch_gemm(stream, g.c, g.n * hw, g.k * rs, 1, g.k * rs, WeightColumnsAsRows{w, g.c, rs},
                GradOutputColumns{dy, g}, DataStore{dx, g.c, hw});
  }
  // Split-K for dW: enough blocks to fill a GPU (~256), each split at least 8 slices of 16 long. Depends on
  // the shape alone, so the summation order (and the bits) are the same on every device.
  const int npq = g.n * pq;
  const std::int64_t tiles = detail::ceil_div(g.k, kTileM) * detail::ceil_div(crs, kTileN);
  const std::int64_t slices = detail::ceil_div(npq, kTileK);
  std::int64_t splits = std::clamp<std::int64_t>(detail::ceil_div(256, tiles), 1, 64);
  splits = std::clamp<std::int64_t>(std::min(splits, slices / 8), 1, 64);
  const int k_per_split = static_cast<int>(detail::ceil_div(slices, splits) * kTileK);
  splits = detail::ceil_div(npq, k_per_split);  // no empty split
  if (splits == 1) {
    launch_gemm(stream, g.k, crs, npq, 1, k_per_split, GradOutputRows{dy, g.k, pq}, Im2colRows{x, g},
                SplitStore{dw, g.k, crs});
    return;
  }
  const std::int64_t w_size = static_cast<std::int64_t>(g.k) * crs;
  Tensor partial = detail::scratch<float>(splits * w_size, stream);
  launch_gemm(stream, g.k, crs, npq, static_cast<int>(splits), k_per_split, GradOutputRows{dy, g.k, pq},
              Im2colRows{x, g}, SplitStore{partial.data<float>(), g.k, crs});
  sum_splits_kernel<<<detail::grid_for(w_size), detail::kBlock, 0, stream>>>(
      partial.data<float>(), static_cast<int>(splits), w_size, dw);
  ENGINE_LAUNCH_CHECK();
}

}  // namespace engine::cuda
