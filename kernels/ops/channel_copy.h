#pragma once
// Copies along the channel axis (axis 1 of [N, C, ...]), in the tensors' layout (kernels/cpu/copy_rows.h):
// Concat and Split of channels (each the other's backward), Slice of a channel range, channel shuffle.

#include <vector>

#include "core/execution_context.h"
#include "core/tensor.h"

namespace engine::ops {

// y's channels [offset, offset + x's channels) = x (the other channels of y untouched). Same N and spatial
// sizes, same layout. Concat is one call per input; Split's backward the same.
void copy_into_channels(const ExecutionContext& ctx, const Tensor& x, const Tensor& y, std::int64_t offset);
// y = x's channels [offset, offset + y's channels). Split is one call per output; Slice one call.
void copy_from_channels(const ExecutionContext& ctx, const Tensor& x, std::int64_t offset, const Tensor& y);
// y = x with channel c taken from channel (c % groups) * (C / groups) + c / groups.
void channel_shuffle(const ExecutionContext& ctx, const Tensor& x, std::int64_t groups, const Tensor& y);

}  // namespace engine::ops
