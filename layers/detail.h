#pragma once
// Internal helpers shared by the layer implementations. Not part of the public layer API. The device, dtype
// and layout of each op are chosen by kernels/ops (kernels/ops/dispatch.h), not here.

#include <cstdint>

namespace engine::layers::detail {

inline int to_int(std::int64_t v) { return static_cast<int>(v); }

}  // namespace engine::layers::detail
