// The augmentation kernel: gather, random crop with zero (or reflection) padding, horizontal flip (random or
// alternating by epoch), normalize, float32 NCHW or NHWC (channels last: the same values, each stored at its
// NHWC position, so an NHWC model needs no transpose of its input).
//
// One block per image. Thread 0 draws the image's crop and flip once (data/augment_params.h, the same code
// the CPU runs) and shares it; then the block walks the image's C*H*W outputs with consecutive threads on
// consecutive outputs, so the float stores coalesce. The work is a byte load and two correctly rounded
// divisions per output: the kernel is bound by memory traffic, which is the 4 output bytes per pixel.

#include "core/cuda_check.h"
#include "core/error.h"
#include "data/augment_params.h"
#include "data/cuda/transforms.h"
#include "kernels/cuda/nvtx.h"

namespace engine::data::cuda {
namespace {

constexpr int kThreads = 256;

template <Layout L>
__global__ void __launch_bounds__(kThreads) augment_normalize_kernel(AugmentBatchArgs a) {
  const std::int64_t b = blockIdx.x;
  const std::int64_t entry0 = a.device_offset != nullptr ? *a.device_offset : 0;
  const std::uint64_t epoch = a.device_epoch != nullptr ? *a.device_epoch : a.epoch;
  const std::int64_t row = a.gather != nullptr ? a.gather[entry0 + b] : b;
  // Plain words in shared memory (no constructor runs for __shared__ objects).
  __shared__ std::int32_t shared_draw[3];
  if (threadIdx.x == 0) {
    const AugmentDraw first =
        draw_augment(a.spec, epoch, static_cast<std::uint64_t>(a.sample_ids[entry0 + b]));
    shared_draw[0] = first.dx;
    shared_draw[1] = first.dy;
    shared_draw[2] = first.flip ? 1 : 0;
    if (a.labels != nullptr) a.out_labels[b] = a.labels[row];
  }
  __syncthreads();
  AugmentDraw d;
  d.dx = shared_draw[0];
  d.dy = shared_draw[1];
  d.flip = shared_draw[2] != 0;

  const std::int32_t hw = a.height * a.width;
  const std::int32_t chw = a.channels * hw;
  const std::uint8_t* src = a.images + row * chw;
  float* dst = a.out + b * chw;
  for (std::int32_t e = static_cast<std::int32_t>(threadIdx.x); e < chw; e += kThreads) {
    // Output e in the layout's memory order: (c, y, x) of NCHW, (y, x, c) of NHWC.
    std::int32_t c = 0, pixel = 0;
    if constexpr (L == Layout::NHWC) {
      pixel = e / a.channels;
      c = e - pixel * a.channels;
    } else {
      c = e / hw;
      pixel = e - c * hw;
    }
    const std::int32_t y = pixel / a.width;
    const std::int32_t x = pixel - y * a.width;
    std::int32_t sy = source_y(y, d, a.spec.pad);
    std::int32_t sx = source_x(x, a.width, d, a.spec.pad);
    if (a.spec.reflect_pad) {
      sy = reflect_index(sy, a.height);
      sx = reflect_index(sx, a.width);
    }
    const bool inside = sy >= 0 && sy < a.height && sx >= 0 && sx < a.width;
    const std::uint8_t v = inside ? src[c * hw + sy * a.width + sx] : std::uint8_t{0};
    dst[e] = normalize_value(v, a.mean[c], a.std_dev[c]);
  }
}

}  // namespace

void augment_normalize(const AugmentBatchArgs& a, cudaStream_t stream) {
  ENGINE_NVTX_RANGE("augment_normalize");
  ENGINE_CHECK(a.batch >= 0 && a.batch <= 0x7fffffff, "augment_normalize: batch {} out of range", a.batch);
  ENGINE_CHECK(a.channels >= 1 && a.channels <= kMaxChannels,
               "augment_normalize: {} channels (1..{} supported)", a.channels, kMaxChannels);
  ENGINE_CHECK(a.height >= 1 && a.width >= 1, "augment_normalize: image {}x{}", a.height, a.width);
  ENGINE_CHECK(static_cast<std::int64_t>(a.channels) * a.height * a.width <= 0x7fffffff,
               "augment_normalize: image of {}x{}x{} too large", a.channels, a.height, a.width);
  ENGINE_CHECK(a.spec.pad >= 0, "augment_normalize: negative padding {}", a.spec.pad);
  ENGINE_CHECK(!a.spec.reflect_pad || (a.spec.pad < a.height && a.spec.pad < a.width),
               "augment_normalize: reflection padding {} needs images larger than it, not {}x{}", a.spec.pad,
               a.height, a.width);
  ENGINE_CHECK(a.labels == nullptr || a.out_labels != nullptr,
               "augment_normalize: labels without out_labels");
  if (a.batch == 0) return;
  ENGINE_CHECK(a.images != nullptr && a.sample_ids != nullptr && a.out != nullptr,
               "augment_normalize: null images, sample_ids or out");
  const auto blocks = static_cast<unsigned>(a.batch);
  if (a.out_layout == Layout::NHWC) {
    augment_normalize_kernel<Layout::NHWC><<<blocks, kThreads, 0, stream>>>(a);
  } else {
    augment_normalize_kernel<Layout::NCHW><<<blocks, kThreads, 0, stream>>>(a);
  }
  ENGINE_LAUNCH_CHECK();
}

}  // namespace engine::data::cuda
