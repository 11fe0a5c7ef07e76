#include "data/transforms.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "core/error.h"
#include "kernels/cpu/transpose.h"

#if ENGINE_HAVE_CUDA
#include "data/cuda/transforms.h"
#endif

namespace engine::data {

namespace {
constexpr std::int64_t kStatsSamples = 512;  // channel_mean_std of an on-disk dataset
}  // namespace

TransformConfig TransformConfig::train(std::vector<float> mean, std::vector<float> std, std::uint64_t seed,
                                       std::int32_t pad) {
  TransformConfig c;
  c.random_crop = true;
  c.crop_padding = pad;
  c.random_flip = true;
  c.mean = std::move(mean);
  c.std = std::move(std);
  c.seed = seed;
  return c;
}

TransformConfig TransformConfig::flip_translate(std::vector<float> mean, std::vector<float> std,
                                                std::uint64_t seed, std::int32_t pad) {
  TransformConfig c = train(std::move(mean), std::move(std), seed, pad);
  c.random_flip = false;
  c.alternate_flip = true;
  c.reflect_pad = true;
  return c;
}

TransformConfig TransformConfig::view(std::vector<float> mean, std::vector<float> std, std::int32_t pad,
                                      std::int32_t dx, std::int32_t dy, bool flip) {
  TransformConfig c = eval(std::move(mean), std::move(std));
  c.crop_padding = pad;
  c.reflect_pad = true;
  c.fixed_view = true;
  c.view_dx = dx;
  c.view_dy = dy;
  c.view_flip = flip;
  return c;
}

TransformConfig TransformConfig::eval(std::vector<float> mean, std::vector<float> std) {
  TransformConfig c;
  c.crop_padding = 0;
  c.mean = std::move(mean);
  c.std = std::move(std);
  return c;
}

ChannelStats channel_mean_std(const Dataset& dataset) {
  validate(dataset, "channel_mean_std");
  ENGINE_CHECK(dataset.size() >= 1, "channel_mean_std: the dataset is empty");
  const std::int64_t channels = dataset.channels, plane = dataset.height * dataset.width;
  // Exact sums: at most 2^31 pixels of 255^2 per channel fit easily in 64 bits.
  std::vector<std::uint64_t> sum(static_cast<std::size_t>(channels), 0), sum_sq(sum);
  // On disk: kStatsSamples images evenly spread, as epoch 0 reads them.
  const std::int64_t count = dataset.on_disk() ? std::min(dataset.size(), kStatsSamples) : dataset.size();
  std::vector<std::uint8_t> pixels(dataset.on_disk() ? static_cast<std::size_t>(dataset.image_bytes()) : 0);
  for (std::int64_t k = 0; k < count; ++k) {
    const std::int64_t i = k * dataset.size() / count;
    const std::uint8_t* image = dataset.on_disk() ? pixels.data() : dataset.image(i);
    if (dataset.on_disk()) read_sample(dataset, i, 0, pixels.data());
    for (std::int64_t c = 0; c < channels; ++c) {
      std::uint64_t s = 0, q = 0;
      for (std::int64_t p = 0; p < plane; ++p) {
        const std::uint64_t v = image[c * plane + p];
        s += v;
        q += v * v;
      }
      sum[static_cast<std::size_t>(c)] += s;
      sum_sq[static_cast<std::size_t>(c)] += q;
    }
  }
  const double n = static_cast<double>(count * plane);
  ChannelStats stats;
  for (std::int64_t c = 0; c < channels; ++c) {
    const double mean = static_cast<double>(sum[static_cast<std::size_t>(c)]) / n;
    const double var =
        std::max(0.0, static_cast<double>(sum_sq[static_cast<std::size_t>(c)]) / n - mean * mean);
    stats.mean.push_back(static_cast<float>(mean / 255.0));
    stats.std.push_back(static_cast<float>(std::sqrt(var) / 255.0));
  }
  return stats;
}

Transform::Transform(TransformConfig config) : config_(std::move(config)) {
  ENGINE_CHECK(config_.mean.size() == config_.std.size(), "Transform: {} means for {} standard deviations",
               config_.mean.size(), config_.std.size());
  ENGINE_CHECK(config_.crop_padding >= 0 && config_.crop_padding <= (1 << 16), "Transform: crop padding {}",
               config_.crop_padding);
  ENGINE_CHECK(!config_.fixed_view || (config_.view_dx >= 0 && config_.view_dx <= 2 * config_.crop_padding &&
                                       config_.view_dy >= 0 && config_.view_dy <= 2 * config_.crop_padding),
               "Transform: view at ({}, {}) outside [0, {}]", config_.view_dx, config_.view_dy,
               2 * config_.crop_padding);
  for (std::size_t c = 0; c < config_.std.size(); ++c) {
    ENGINE_CHECK(std::isfinite(config_.std[c]) && config_.std[c] > 0.0f && std::isfinite(config_.mean[c]),
                 "Transform: channel {} has mean {} and std {}; std must be positive and both finite", c,
                 config_.mean[c], config_.std[c]);
  }
  const std::size_t tables = std::max<std::size_t>(config_.mean.size(), 1);
  table_.resize(tables * 256);
  for (std::size_t c = 0; c < tables; ++c) {
    const float m = config_.mean.empty() ? 0.0f : config_.mean[c];
    const float s = config_.std.empty() ? 1.0f : config_.std[c];
    for (int x = 0; x < 256; ++x)
      table_[c * 256 + static_cast<std::size_t>(x)] = normalize_value(static_cast<std::uint8_t>(x), m, s);
  }
}

AugmentSpec Transform::spec() const {
  AugmentSpec s;
  s.seed = config_.seed;
  s.pad = config_.crop_padding;
  s.random_crop = config_.random_crop;
  s.random_flip = config_.random_flip;
  s.alternate_flip = config_.alternate_flip;
  s.reflect_pad = config_.reflect_pad;
  s.fixed_view = config_.fixed_view;
  s.view_dx = config_.view_dx;
  s.view_dy = config_.view_dy;
  s.view_flip = config_.view_flip;
  return s;
}

AugmentDraw Transform::draw(std::uint64_t epoch, std::int64_t sample_index) const {
  return draw_augment(spec(), epoch, static_cast<std::uint64_t>(sample_index));
}

float Transform::mean(std::int64_t c) const {
  return config_.mean.empty() ? 0.0f : config_.mean.at(static_cast<std::size_t>(c));
}

float Transform::std_dev(std::int64_t c) const {
  return config_.std.empty() ? 1.0f : config_.std.at(static_cast<std::size_t>(c));
}

void Transform::check_channels(std::int64_t channels) const {
  ENGINE_CHECK(config_.mean.empty() || static_cast<std::int64_t>(config_.mean.size()) == channels,
               "Transform: images have {} channels but mean/std give {}", channels, config_.mean.size());
}

const float* Transform::table(std::int64_t c) const {
  return table_.data() + (config_.mean.empty() ? 0 : c * 256);
}

void Transform::apply(const std::uint8_t* src, std::int64_t channels, std::int64_t height, std::int64_t width,
                      std::int64_t sample_index, std::uint64_t epoch, float* dst) const {
  check_channels(channels);
  const AugmentDraw d = draw(epoch, sample_index);
  const auto pad = static_cast<std::int32_t>(config_.crop_padding);
  const auto h = static_cast<std::int32_t>(height), w = static_cast<std::int32_t>(width);
  if (config_.reflect_pad) {
    // Every output pixel reads a pixel of the image (reflected where the window leaves it).
    ENGINE_CHECK(pad < h && pad < w,
                 "Transform: reflection padding {} needs images larger than it, not {}x{}", pad, h, w);
    for (std::int64_t c = 0; c < channels; ++c) {
      const float* lut = table(c);
      for (std::int32_t y = 0; y < h; ++y) {
        const std::uint8_t* row = src + (c * height + reflect_index(source_y(y, d, pad), h)) * width;
        float* out = dst + (c * height + y) * width;
        for (std::int32_t x = 0; x < w; ++x) out[x] = lut[row[reflect_index(source_x(x, w, d, pad), w)]];
      }
    }
    return;
  }
  // Column x reads source column x + shift (or, flipped, w - 1 - x + shift); the columns whose source lies
  // inside the image form one range [x0, x1), the rest are padding.
  const std::int32_t shift = d.dx - pad;
  const std::int32_t x0 = std::clamp(d.flip ? shift : -shift, 0, w);
  const std::int32_t x1 = std::clamp(d.flip ? w + shift : w - shift, x0, w);
  for (std::int64_t c = 0; c < channels; ++c) {
    const float* lut = table(c);
    const float zero = lut[0];
    for (std::int32_t y = 0; y < h; ++y) {
      float* out = dst + (c * height + y) * width;
      const std::int32_t sy = source_y(y, d, pad);
      if (sy < 0 || sy >= h) {
        std::fill(out, out + w, zero);
        continue;
      }
      const std::uint8_t* row = src + (c * height + sy) * width;
      std::fill(out, out + x0, zero);
      if (d.flip) {
        const std::int32_t mirror = w - 1 + shift;
        for (std::int32_t x = x0; x < x1; ++x) out[x] = lut[row[mirror - x]];
      } else {
        for (std::int32_t x = x0; x < x1; ++x) out[x] = lut[row[x + shift]];
      }
      std::fill(out + x1, out + w, zero);
    }
  }
}

void Transform::apply_in_layout(const std::uint8_t* src, std::int64_t channels, std::int64_t height,
                                std::int64_t width, std::int64_t sample_index, std::uint64_t epoch,
                                Layout layout, float* dst, std::vector<float>& scratch) const {
  ENGINE_CHECK(!is_blocked(layout), "Transform: batches come NCHW or NHWC, not {}", layout_name(layout));
  if (layout == Layout::NCHW) {
    apply(src, channels, height, width, sample_index, epoch, dst);
    return;
  }
  scratch.resize(static_cast<std::size_t>(channels * height * width));
  apply(src, channels, height, width, sample_index, epoch, scratch.data());
  cpu::batched_transpose(1, channels, height * width, scratch.data(), dst);  // [C, H*W] -> [H*W, C]
}

void Transform::apply_batch(const Tensor& images, const Tensor& sample_ids, std::uint64_t epoch, Tensor& out,
                            void* stream) const {
  ENGINE_CHECK(images.dtype() == DType::U8 && images.ndim() == 4,
               "Transform::apply_batch: images {} must be "
               "uint8 [B, C, H, W]",
               images.str());
  const std::int64_t batch = images.dim(0), channels = images.dim(1), height = images.dim(2),
                     width = images.dim(3);
  ENGINE_CHECK(sample_ids.dtype() == DType::I32 && sample_ids.ndim() == 1 && sample_ids.dim(0) == batch,
               "Transform::apply_batch: sample_ids {} must be int32 [{}]", sample_ids.str(), batch);
  ENGINE_CHECK(out.dtype() == DType::F32 && out.shape() == images.shape(),
               "Transform::apply_batch: out {} must be float32 of the images' shape {}", out.str(),
               images.str());
  ENGINE_CHECK(images.device() == sample_ids.device() && images.device() == out.device(),
               "Transform::apply_batch: images {}, sample_ids {} and out {} must share a device",
               images.str(), sample_ids.str(), out.str());
  check_channels(channels);
  ENGINE_CHECK(images.layout() == Layout::NCHW,
               "Transform::apply_batch: images {} must be NCHW (uint8 records)", images.str());
  if (images.device().is_cpu()) {
    const std::uint8_t* src = images.data<std::uint8_t>();
    const std::int32_t* ids = sample_ids.data<std::int32_t>();
    float* dst = out.data<float>();
    const std::int64_t chw = channels * height * width;
    std::vector<float> scratch;
    for (std::int64_t b = 0; b < batch; ++b) {
      apply_in_layout(src + b * chw, channels, height, width, ids[b], epoch, out.layout(), dst + b * chw,
                      scratch);
    }
    return;
  }
#if ENGINE_HAVE_CUDA
  cuda::AugmentBatchArgs args;
  args.images = images.data<std::uint8_t>();
  args.sample_ids = sample_ids.data<std::int32_t>();
  args.batch = batch;
  ENGINE_CHECK(channels <= cuda::kMaxChannels && height <= 0x7fffffff && width <= 0x7fffffff,
               "Transform::apply_batch: {} is too large for the CUDA kernel", images.str());
  args.channels = static_cast<std::int32_t>(channels);
  args.height = static_cast<std::int32_t>(height);
  args.width = static_cast<std::int32_t>(width);
  args.spec = spec();
  args.epoch = epoch;
  for (std::int64_t c = 0; c < channels; ++c) {
    args.mean[c] = mean(c);
    args.std_dev[c] = std_dev(c);
  }
  args.out = out.data<float>();
  args.out_layout = out.layout();
  cuda::augment_normalize(args, static_cast<cudaStream_t>(stream));
#else
  (void)stream;
  (void)epoch;
  ENGINE_FAIL("Transform::apply_batch on {} needs CUDA, and this build has none", images.str());
#endif
}

}  // namespace engine::data
