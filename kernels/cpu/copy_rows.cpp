#include "kernels/cpu/copy_rows.h"

#include "core/error.h"

namespace engine {

void RowCopy::validate() const {
  ENGINE_CHECK(
      rows >= 0 && count >= 0 && src_offset >= 0 && dst_offset >= 0 && src_offset + count <= src_stride &&
          dst_offset + count <= dst_stride,
      "copy_rows: {} rows of {} values from offset {} of rows of {} to offset {} of rows of {}: out of "
      "range",
      rows, count, src_offset, src_stride, dst_offset, dst_stride);
}

}  // namespace engine

namespace engine::cpu {

template <typename T>
void copy_rows(const RowCopy& c, const T* src, T* dst) {
  c.validate();
  for (std::int64_t r = 0; r < c.rows; ++r) {
    for (std::int64_t k = 0; k < c.count; ++k)
      dst[r * c.dst_stride + c.dst_offset + k] = src[r * c.src_stride + c.src_offset + k];
  }
}

template <typename T>
void channel_shuffle(std::int64_t outer, std::int64_t channels, std::int64_t inner, std::int64_t groups,
                     const T* src, T* dst) {
  ENGINE_CHECK(groups > 0 && channels % groups == 0, "channel_shuffle: {} groups of {} channels", groups,
               channels);
  const std::int64_t per_group = channels / groups;
  for (std::int64_t o = 0; o < outer; ++o) {
    for (std::int64_t c = 0; c < channels; ++c) {
      const std::int64_t from = (c % groups) * per_group + c / groups;
      for (std::int64_t i = 0; i < inner; ++i)
        dst[(o * channels + c) * inner + i] = src[(o * channels + from) * inner + i];
    }
  }
}

template void copy_rows<float>(const RowCopy&, const float*, float*);
template void copy_rows<double>(const RowCopy&, const double*, double*);
template void channel_shuffle<float>(std::int64_t, std::int64_t, std::int64_t, std::int64_t, const float*,
                                     float*);
template void channel_shuffle<double>(std::int64_t, std::int64_t, std::int64_t, std::int64_t, const double*,
                                      double*);

}  // namespace engine::cpu
