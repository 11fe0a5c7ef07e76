#include "kernels/cpu_fast/copy_rows.h"

#include <cstring>

#include "core/error.h"
#include "kernels/cpu_fast/parallel.h"

namespace engine::cpu_fast {

void copy_rows(const RowCopy& c, const float* src, float* dst) {
  c.validate();
  const auto bytes = static_cast<std::size_t>(c.count) * sizeof(float);
#pragma omp parallel for if (c.rows * c.count >= kParallelMinElements) schedule(static)
  for (std::int64_t r = 0; r < c.rows; ++r)
    std::memcpy(dst + r * c.dst_stride + c.dst_offset, src + r * c.src_stride + c.src_offset, bytes);
}

void channel_shuffle(std::int64_t outer, std::int64_t channels, std::int64_t inner, std::int64_t groups,
                     const float* src, float* dst) {
  ENGINE_CHECK(groups > 0 && channels % groups == 0, "channel_shuffle: {} groups of {} channels", groups,
               channels);
  const std::int64_t per_group = channels / groups;
  const auto bytes = static_cast<std::size_t>(inner) * sizeof(float);
#pragma omp parallel for if (outer * channels * inner >= kParallelMinElements) schedule(static)
  for (std::int64_t o = 0; o < outer; ++o) {
    for (std::int64_t c = 0; c < channels; ++c) {
      const std::int64_t from = (c % groups) * per_group + c / groups;
      std::memcpy(dst + (o * channels + c) * inner, src + (o * channels + from) * inner, bytes);
    }
  }
}

}  // namespace engine::cpu_fast
