#pragma once
// Flatten, the CPU reference: [n, c, h, w] -> [n, c*h*w]. For contiguous NCHW data the bytes do not move,
// so forward and backward are copies (in place, when the pointers are equal, they do nothing). The pair
// exists so that the reference covers every op of the network and the CPU device has an implementation.
//
// Backward OVERWRITES dx with dy reshaped back to [n, c, h, w].

namespace engine::cpu {

// Throws engine::Error unless n, c, h, w are all positive.
template <typename T>
void flatten_forward(int n, int c, int h, int w, const T* x, T* y);

template <typename T>
void flatten_backward(int n, int c, int h, int w, const T* dy, T* dx);

}  // namespace engine::cpu
