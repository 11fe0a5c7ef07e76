#pragma once
// Bias add and bias gradient, hand-written, for convolutions (NCHW: one bias per channel) and linear layers
// (rows x cols: one bias per column).
//
// The gradients are reductions (over N*H*W, or over the rows) accumulated in DOUBLE, split over a grid,
// and finished in a fixed order by the last block to arrive (channel_reduce*.cuh; rows: one block per column
// tile): deterministic, and accurate to the final rounding. They OVERWRITE db. The adds are y += b in float
// (each element rounded once).

#include <cstdint>

#include "core/dtype.h"
#include "kernels/cuda_api.h"

namespace engine::cuda {

// y[n, c, i] += bias[c] for the hw cells i of each (n, c) plane.
void bias_add_nchw(cudaStream_t stream, float* y, const float* bias, int n, int c, int hw);
// db[c] = sum over n and the hw cells of dy[n, c, :].
void bias_grad_nchw(cudaStream_t stream, const float* dy, float* db, int n, int c, int hw);

// NHWC (channels last): db[c] = sum over the rows of dy[rows, c] (rows = N*H*W), by the row-tile reduction
// of channel_reduce_nhwc.cuh (many blocks, double, fixed-order finish). The NHWC add is bias_add_rows.
void bias_grad_nhwc(cudaStream_t stream, const float* dy, float* db, std::int64_t rows, int c);

// y[i, j] += bias[j] for a row-major [rows, cols] y.
void bias_add_rows(cudaStream_t stream, float* y, const float* bias, int rows, int cols);
// db[j] = sum_i dy[i, j].
void bias_grad_rows(cudaStream_t stream, const float* dy, float* db, int rows, int cols);

// The same over bf16 data (bf16 autocast, kernels/ops/autocast_bf16.h): y = bf16(y + bf16(bias)) in fp32
// arithmetic (the fp32 master bias rounded to bf16 first, as autocast's bias copy); the gradients read bf16
// dy, accumulate in double and write fp32 db (not rounded: the caller rounds where autocast does).
void bias_add_nchw(cudaStream_t stream, bfloat16* y, const float* bias, int n, int c, int hw);
void bias_grad_nchw(cudaStream_t stream, const bfloat16* dy, float* db, int n, int c, int hw);
void bias_add_rows(cudaStream_t stream, bfloat16* y, const float* bias, int rows, int cols);
void bias_grad_rows(cudaStream_t stream, const bfloat16* dy, float* db, int rows, int cols);
void bias_grad_nhwc(cudaStream_t stream, const bfloat16* dy, float* db, std::int64_t rows, int c);

}  // namespace engine::cuda
