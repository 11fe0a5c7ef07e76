#pragma once
// kernels/cpu/copy_rows.h in float32, OpenMP-threaded over the rows (memcpy per row).

#include <cstdint>

#include "kernels/cpu/copy_rows.h"

namespace engine::cpu_fast {

void copy_rows(const RowCopy& c, const float* src, float* dst);
void channel_shuffle(std::int64_t outer, std::int64_t channels, std::int64_t inner, std::int64_t groups,
                     const float* src, float* dst);

}  // namespace engine::cpu_fast
