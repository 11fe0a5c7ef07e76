#pragma once
// The one definition of what a random augmentation draws and how a pixel is normalized, shared by the CPU
// transforms (data/transforms.cpp) and the CUDA kernel (data/cuda/transforms.cu) so the two cannot drift.
//
// Draws: a sample's crop offsets and flip come from Philox block `sample_index` of the stream
// (seed, kAugmentStream | epoch). They depend on nothing else: not on the rank, the worker thread, the batch
// the sample lands in, or the device, so a sample looks the same on every path and every world size.
//
// Geometry (torchvision's RandomCrop(size = image size, padding = pad) then RandomHorizontalFlip(0.5)): the
// image is zero-padded by `pad` on every side, a window of the original size is cut at (dx, dy) with dx, dy
// uniform in [0, 2*pad], and the window is mirrored left-right with probability 1/2. Without a crop the
// window sits at (pad, pad), the identity. Padding pixels are the uint8 value 0, normalized like any other
// pixel (as torchvision pads before ToTensor/Normalize).
//
// airbench94's variants (issue 18): `alternate_flip` mirrors each image on alternate epochs, with a random
// phase per image (one Philox bit of block `sample_index` of the stream (seed, kFlipPhaseStream), the same
// every epoch): flip = phase XOR (epoch odd), so every image is seen both ways every two epochs (airbench
// flips half the set at random once, then the whole set on odd epochs: the same law). `reflect_pad` pads by
// reflection (PyTorch's F.pad mode 'reflect', the edge pixel not repeated: -1 -> 1, n -> n - 2) instead of
// zeros, as airbench's translate does; it needs pad <= min(height, width) - 1.
//
// Normalize: out = (x / 255 - mean) / std, in float32, in exactly torchvision's operation order
// (ToTensor divides by 255, Normalize subtracts then divides). Each of the three operations is a correctly
// rounded IEEE operation on both sides: on the host, SSE float arithmetic (division and subtraction are
// never contracted into an FMA, unlike a*b+c); on the device, the __fdiv_rn/__fsub_rn intrinsics, which
// neither -use_fast_math nor FMA contraction can change. So CPU and GPU outputs are bitwise equal, and equal
// to torchvision's for the same crop and flip.

#include <cmath>
#include <cstdint>

#include "core/philox.h"

namespace engine::data {

// Philox offsets that name the data pipeline's random streams; the high 32 bits keep them apart from other
// users of the same seed (dropout offsets count steps from 0).
constexpr std::uint64_t kAugmentStream = 0x4155474dull << 32;      // "AUGM"; low 32 bits: the epoch
constexpr std::uint64_t kSamplerStream = 0x53414d50ull << 32;      // "SAMP"
constexpr std::uint64_t kFlipPhaseStream = 0x464c4950ull << 32;    // "FLIP": the alternating flip's phase
constexpr std::uint64_t kResizedCropStream = 0x52524352ull << 32;  // "RRCR"; low 32 bits: the epoch

// What the augmentation does; plain data so it can be passed to a kernel by value.
struct AugmentSpec {
  std::uint64_t seed = 0;
  std::int32_t pad = 0;         // zero padding on each side for the random crop
  bool random_crop = false;     // off: the window sits at (pad, pad), i.e. no crop
  bool random_flip = false;     // on: mirror left-right with probability 1/2
  bool alternate_flip = false;  // on: mirror on alternate epochs, phase random per image (wins over random)
  bool reflect_pad = false;     // pad by reflection instead of zeros
  // Test-time augmentation: every image gets this one view (window at (view_dx, view_dy), mirrored or not)
  // instead of a draw.
  bool fixed_view = false;
  std::int32_t view_dx = 0, view_dy = 0;
  bool view_flip = false;
};

// One sample's draw: the window's top-left corner in the padded image, and whether it is mirrored.
struct AugmentDraw {
  std::int32_t dx = 0;  // in [0, 2*pad]
  std::int32_t dy = 0;  // in [0, 2*pad]
  bool flip = false;
};

// Uniform in [0, n) from 32 random bits by multiply-shift (bias below n / 2^32, i.e. 2e-9 for n = 9).
ENGINE_HOST_DEVICE std::int32_t uniform_below(std::uint32_t bits, std::uint32_t n) {
  return static_cast<std::int32_t>((static_cast<std::uint64_t>(bits) * n) >> 32);
}

ENGINE_HOST_DEVICE AugmentDraw draw_augment(const AugmentSpec& spec, std::uint64_t epoch,
                                            std::uint64_t sample_index) {
  AugmentDraw d;
  if (spec.fixed_view) {
    d.dx = spec.view_dx;
    d.dy = spec.view_dy;
    d.flip = spec.view_flip;
    return d;
  }
  const PhiloxBlock bits = philox_block(spec.seed, kAugmentStream | (epoch & 0xffffffffull), sample_index);
  d.dx = spec.pad;
  d.dy = spec.pad;
  if (spec.random_crop) {
    const auto span = static_cast<std::uint32_t>(2 * spec.pad + 1);
    d.dx = uniform_below(bits.v[0], span);
    d.dy = uniform_below(bits.v[1], span);
  }
  if (spec.alternate_flip) {
    const PhiloxBlock phase = philox_block(spec.seed, kFlipPhaseStream, sample_index);
    d.flip = (((phase.v[0] >> 31) ^ static_cast<std::uint32_t>(epoch & 1u)) != 0u);
  } else if (spec.random_flip) {
    d.flip = (bits.v[2] >> 31) != 0u;
  }
  return d;
}

// A source coordinate outside [0, n) mapped back inside by reflection (PyTorch's 'reflect'); valid for
// coordinates in [-(n-1), 2n-2], i.e. pad <= n - 1.
ENGINE_HOST_DEVICE std::int32_t reflect_index(std::int32_t i, std::int32_t n) {
  if (i < 0) return -i;
  if (i >= n) return 2 * (n - 1) - i;
  return i;
}

// Output row y reads source row source_y(...) of the original image; outside [0, height) it reads padding.
ENGINE_HOST_DEVICE std::int32_t source_y(std::int32_t y, const AugmentDraw& d, std::int32_t pad) {
  return y + d.dy - pad;
}

// Output column x reads source column source_x(...); the flip mirrors the window, then the crop shifts it.
ENGINE_HOST_DEVICE std::int32_t source_x(std::int32_t x, std::int32_t width, const AugmentDraw& d,
                                         std::int32_t pad) {
  const std::int32_t in_window = d.flip ? width - 1 - x : x;
  return in_window + d.dx - pad;
}

// (x / 255 - mean) / std, each operation rounded to nearest (see the header comment).
ENGINE_HOST_DEVICE float normalize_value(std::uint8_t x, float mean, float std_dev) {
#if defined(__CUDA_ARCH__)
  return __fdiv_rn(__fsub_rn(__fdiv_rn(static_cast<float>(x), 255.0f), mean), std_dev);
#else
  const float unit = static_cast<float>(x) / 255.0f;
  const float centered = unit - mean;
  return centered / std_dev;
#endif
}

// RandomResizedCrop's box (torchvision's get_params, host only): up to 10 attempts of an area fraction
// uniform in [scale_min, scale_max] and a log-uniform aspect ratio in [ratio_min, ratio_max]; the first box
// that fits is placed uniformly; else the central crop at the nearest allowed ratio. Attempt a of sample
// `sample_index` reads Philox block sample_index * 10 + a of the stream (seed, kResizedCropStream | epoch):
// its words are the area, the ratio, the row and the column. Returns {top, left, height, width}.
struct CropBox {
  std::int64_t top = 0, left = 0, height = 0, width = 0;
};
inline CropBox random_resized_crop_box(std::int64_t height, std::int64_t width, double scale_min,
                                       double scale_max, double ratio_min, double ratio_max,
                                       std::uint64_t seed, std::uint64_t epoch, std::uint64_t sample_index) {
  const double area = static_cast<double>(height) * static_cast<double>(width);
  const double log_lo = std::log(ratio_min), log_hi = std::log(ratio_max);
  const auto unit = [](std::uint32_t bits) { return static_cast<double>(bits) * 0x1p-32; };
  for (std::uint64_t attempt = 0; attempt < 10; ++attempt) {
    const PhiloxBlock bits =
        philox_block(seed, kResizedCropStream | (epoch & 0xffffffffull), sample_index * 10 + attempt);
    const double target = area * (scale_min + (scale_max - scale_min) * unit(bits.v[0]));
    const double aspect = std::exp(log_lo + (log_hi - log_lo) * unit(bits.v[1]));
    const auto w = static_cast<std::int64_t>(std::nearbyint(std::sqrt(target * aspect)));
    const auto h = static_cast<std::int64_t>(std::nearbyint(std::sqrt(target / aspect)));
    if (w > 0 && w <= width && h > 0 && h <= height) {
      return {uniform_below(bits.v[2], static_cast<std::uint32_t>(height - h + 1)),
              uniform_below(bits.v[3], static_cast<std::uint32_t>(width - w + 1)), h, w};
    }
  }
  const double in_ratio = static_cast<double>(width) / static_cast<double>(height);
  std::int64_t w = width, h = height;
  if (in_ratio < ratio_min) {
    h = static_cast<std::int64_t>(std::nearbyint(static_cast<double>(w) / ratio_min));
  } else if (in_ratio > ratio_max) {
    w = static_cast<std::int64_t>(std::nearbyint(static_cast<double>(h) * ratio_max));
  }
  return {(height - h) / 2, (width - w) / 2, h, w};
}

}  // namespace engine::data
