#pragma once
// Global average pooling, the CPU reference: x[n, c, h, w] -> y[n, c], y = mean over the h*w plane.
// The mean is summed in double and rounded to T once.
//
// Backward spreads each dy evenly: dx[n, c, i, j] = dy[n, c] / (h*w). It OVERWRITES dx.

namespace engine::cpu {

// Throws engine::Error naming `what` unless n, c, h, w are all positive (the fast path checks the same).
void check_global_avgpool_shape(const char* what, int n, int c, int h, int w);

// Throws engine::Error unless n, c, h, w are all positive.
template <typename T>
void global_avgpool_forward(int n, int c, int h, int w, const T* x, T* y);

template <typename T>
void global_avgpool_backward(int n, int c, int h, int w, const T* dy, T* dx);

}  // namespace engine::cpu
