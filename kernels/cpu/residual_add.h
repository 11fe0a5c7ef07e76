#pragma once
// Residual (skip-connection) add, the CPU reference: y = a + b elementwise over n elements.
// The sum is formed in double and rounded once to T.
//
// Backward: da = dy and db = dy (both inputs receive the whole gradient). It OVERWRITES da and db.

#include <cstdint>

namespace engine::cpu {

// y may alias a or b.
template <typename T>
void residual_add_forward(const T* a, const T* b, T* y, std::int64_t n);

// da and db must not alias each other (they would receive the same values anyway); either may alias dy.
template <typename T>
void residual_add_backward(const T* dy, T* da, T* db, std::int64_t n);

}  // namespace engine::cpu
