#pragma once
// Softmax along the last axis of a row-major [rows, k] array, the CPU reference (ONNX's Softmax, axis -1;
// PyTorch's nn.Softmax(dim=1) on [N, classes]):
//   y_j  = e^(x_j - m) / sum_i e^(x_i - m),  m = max_i x_i   (the max subtracted: nothing overflows)
//   dx_j = y_j (dy_j - sum_i dy_i y_i)                          (from the forward OUTPUT y)
// Computed in double and rounded once to T. A NaN in a row makes the whole row NaN (as PyTorch); a row of
// -inf is NaN too (e^(-inf - -inf)).
//
// Backward OVERWRITES dx (it never accumulates into it).

#include <cstdint>

namespace engine::cpu {

// Refuses a negative row count or a row length below 1, naming `op` (every device's softmax checks so).
void check_softmax_sizes(const char* op, std::int64_t rows, std::int64_t k);

// y[r k + j] for rows r in [0, rows), j in [0, k); k >= 1. y may alias x.
template <typename T>
void softmax_forward(const T* x, T* y, std::int64_t rows, std::int64_t k);

// dx from the forward output y and dy. dx may alias dy.
template <typename T>
void softmax_backward(const T* y, const T* dy, T* dx, std::int64_t rows, std::int64_t k);

}  // namespace engine::cpu
