#pragma once
// 2-D average pooling over NCHW, the CPU reference (PyTorch's nn.AvgPool2d in floor mode, ONNX's
// AveragePool with ceil_mode 0).
//
// Output size as max pooling (kernels/cpu/maxpool2d.h). Output (op, oq) is the sum of the real input cells
// of its window, in row-major order, in double, divided by AvgPool2dShape::divisor (the whole window with
// count_include_pad, else its real cells; padding adds zeros either way) and rounded to T once.
//
// Backward: dx[cell] = the sum, over the windows holding the cell in increasing output order, of
// dy / divisor (each quotient and the sum in double), rounded once. It OVERWRITES dx; cells in no window
// (the ragged edge of floor mode) get 0.

#include "kernels/shapes.h"

namespace engine::cpu {

// x: [n, c, h, w]; y: [n, c, p, q].
template <typename T>
void avgpool2d_forward(const AvgPool2dShape& s, const T* x, T* y);

// dy: [n, c, p, q]; dx: [n, c, h, w], overwritten.
template <typename T>
void avgpool2d_backward(const AvgPool2dShape& s, const T* dy, T* dx);

}  // namespace engine::cpu
