// Batched matrix transpose (the NCHW <-> NHWC layout change and cuDNN's KRSC filter copies): each block
// moves one 32x32 tile of one image through shared memory (padded by one column against bank conflicts);
// grid.z strides over the images.
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/nvtx.h"
#include "kernels/cuda/transpose.h"

namespace engine::cuda {
namespace {

constexpr int kTile = 32, kTileRows = 8;
constexpr std::int64_t kMaxGridYZ = 65535;

template <typename T>
__global__ void __launch_bounds__(kTile* kTileRows)
    batched_transpose_kernel(const T* src, T* dst, std::int64_t batch, int rows, int cols) {
  __shared__ T tile[kTile][kTile + 1];
  const int row0 = static_cast<int>(blockIdx.y) * kTile, col0 = static_cast<int>(blockIdx.x) * kTile;
  const int tx = static_cast<int>(threadIdx.x), ty = static_cast<int>(threadIdx.y);
  const std::int64_t plane = static_cast<std::int64_t>(rows) * cols;
  for (std::int64_t b = blockIdx.z; b < batch; b += gridDim.z) {
    const T* s = src + b * plane;
    T* d = dst + b * plane;
    for (int r = ty; r < kTile; r += kTileRows) {
      const int i = row0 + r, j = col0 + tx;  // source row i, column j: read along a row
      if (i < rows && j < cols) tile[r][tx] = s[static_cast<std::int64_t>(i) * cols + j];
    }
    __syncthreads();
    for (int r = ty; r < kTile; r += kTileRows) {
      const int j = col0 + r, i = row0 + tx;  // destination row j, column i: written along a row
      if (i < rows && j < cols) d[static_cast<std::int64_t>(j) * rows + i] = tile[tx][r];
    }
    __syncthreads();  // the tile is reused by the next image
  }
}

template <typename T>
void launch(cudaStream_t stream, std::int64_t batch, int rows, int cols, const void* src, void* dst) {
  const dim3 block(kTile, kTileRows);
  const dim3 grid(static_cast<unsigned>(detail::ceil_div(cols, kTile)),
                  static_cast<unsigned>(detail::ceil_div(rows, kTile)),
                  static_cast<unsigned>(std::min(batch, kMaxGridYZ)));
  batched_transpose_kernel<T>
      <<<grid, block, 0, stream>>>(static_cast<const T*>(src), static_cast<T*>(dst), batch, rows, cols);
  ENGINE_LAUNCH_CHECK();
}

}  // namespace

void batched_transpose(cudaStream_t stream, std::int64_t batch, std::int64_t rows, std::int64_t cols,
                       std::size_t element_bytes, const void* src, void* dst) {
  ENGINE_NVTX_RANGE("batched_transpose");
  const char* op = "batched_transpose";
  ENGINE_CHECK(batch >= 0 && rows >= 0 && cols >= 0, "{}: negative size batch={} rows={} cols={}", op, batch,
               rows, cols);
  if (batch == 0 || rows == 0 || cols == 0) return;
  ENGINE_CHECK(src != nullptr && dst != nullptr, "{}: src and dst must not be null", op);
  detail::check_fits_int(rows * cols, "rows*cols", op);
  ENGINE_CHECK(detail::ceil_div(rows, kTile) <= kMaxGridYZ, "{}: {} rows exceed the grid's {} tiles", op,
               rows, kMaxGridYZ);
  const int r = static_cast<int>(rows), c = static_cast<int>(cols);
  switch (element_bytes) {
    case 2: launch<std::uint16_t>(stream, batch, r, c, src, dst); return;
    case 4: launch<std::uint32_t>(stream, batch, r, c, src, dst); return;
    case 8: launch<std::uint64_t>(stream, batch, r, c, src, dst); return;
    default: ENGINE_FAIL("{}: elements of {} bytes (2, 4 or 8 only)", op, element_bytes);
  }
}

}  // namespace engine::cuda
