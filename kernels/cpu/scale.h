#pragma once
// Scale by a constant, the CPU reference: y = a * x, the product formed in double and rounded once to T.
// Its backward is the same op on dy (dx = a * dy). y may alias x.

#include <cstdint>

namespace engine::cpu {

template <typename T>
void scale(const T* x, double a, T* y, std::int64_t n);

}  // namespace engine::cpu
