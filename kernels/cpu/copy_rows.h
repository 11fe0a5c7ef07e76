#pragma once
// A block copy between two row-major matrices, the kernel of Concat, Split and Slice on the channel axis:
// for each of `rows` rows, `count` elements from src[r * src_stride + src_offset ...] to
// dst[r * dst_stride + dst_offset ...]. NCHW: a row is a sample (stride C*H*W, the channels' planes
// contiguous); NHWC: a row is a pixel (stride C). An exact copy on every device; the reference.

#include <cstdint>

namespace engine {

struct RowCopy {
  std::int64_t rows = 0, count = 0;
  std::int64_t src_stride = 0, src_offset = 0;
  std::int64_t dst_stride = 0, dst_offset = 0;
  // Throws engine::Error unless the sizes are non-negative and each row's range lies inside its stride.
  void validate() const;
};

}  // namespace engine

namespace engine::cpu {

template <typename T>
void copy_rows(const RowCopy& c, const T* src, T* dst);

// Channel shuffle (ShuffleNet's Reshape [N, g, C/g, ...], Transpose, Reshape): output channel c reads input
// channel (c % g) * (C / g) + c / g, in blocks of `inner` values (H*W in NCHW, 1 in NHWC) per channel, for
// `outer` samples (N in NCHW, N*H*W in NHWC). Its backward is the shuffle with C / g groups.
template <typename T>
void channel_shuffle(std::int64_t outer, std::int64_t channels, std::int64_t inner, std::int64_t groups,
                     const T* src, T* dst);

}  // namespace engine::cpu
