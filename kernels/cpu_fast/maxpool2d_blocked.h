#pragma once
// Max pooling on activations in a blocked layout (core/layout.h: nChw8c, nChw16c; `block` channels a block,
// C a multiple of it), float32 or bf16 storage: what a model in a blocked layout runs between its
// convolutions. x, y, dy, dx and argmax are all in that layout; argmax holds, as in maxpool2d.h, the cell
// (ih * W + iw) of its channel's plane, so its values are those of the NCHW kernels. Same contract and bits
// as maxpool2d.h's kernels: the forward scans each window in the same order with the same rule (strict '>',
// NaN wins), and the backward adds each dx cell's dy in the same order (the outputs' scan order) in float.

#include <cstdint>

#include "core/dtype.h"
#include "kernels/cpu/maxpool2d.h"

namespace engine::cpu_fast {

template <typename T>  // float, bfloat16
void maxpool2d_forward_blocked(int block, const Pool2dShape& s, const T* x, T* y, std::int32_t* argmax);
template <typename T>
void maxpool2d_backward_blocked(int block, const Pool2dShape& s, const T* dy, const std::int32_t* argmax,
                                T* dx);

}  // namespace engine::cpu_fast
