#include "apps/pictures/data_grid.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "apps/pictures/canvas.h"
#include "core/error.h"

namespace engine::apps {
namespace {

constexpr int kPad = 4;  // pixels between cells and around the sheet
constexpr std::uint8_t kBackground = 24;
constexpr std::uint8_t kText = 235;

std::vector<std::string> lines_of(const std::string& caption) {
  std::vector<std::string> lines;
  std::istringstream in(caption);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

}  // namespace

data::Image make_sample_grid(const data::Dataset& d, int rows, int cols) {
  ENGINE_CHECK(rows > 0 && cols > 0, "grid of {} x {} cells", rows, cols);
  ENGINE_CHECK(d.size() > 0, "no samples to draw");
  const std::int64_t count = std::min<std::int64_t>(d.size(), std::int64_t{rows} * cols);
  std::vector<std::int64_t> indices;
  std::vector<std::string> captions;
  for (std::int64_t i = 0; i < count; ++i) {
    indices.push_back(i);
    captions.push_back(d.class_names[static_cast<std::size_t>(d.labels[static_cast<std::size_t>(i)])]);
  }
  return make_captioned_grid(d, indices, captions, cols);
}

data::Dataset batch_as_dataset(const Tensor& images, const Tensor& labels, const std::vector<float>& mean,
                               const std::vector<float>& std, std::vector<std::string> class_names,
                               std::int64_t max_images) {
  ENGINE_CHECK(images.device().is_cpu() && images.dtype() == DType::F32 && images.ndim() == 4,
               "batch_as_dataset: images must be float32 [B, C, H, W] on the host, got {}", images.str());
  ENGINE_CHECK(labels.device().is_cpu() && labels.dtype() == DType::I32 && labels.ndim() == 1 &&
                   labels.dim(0) == images.dim(0),
               "batch_as_dataset: labels must be int32 [{}] on the host, got {}", images.dim(0),
               labels.str());
  data::Dataset d;
  d.channels = images.dim(1);
  d.height = images.dim(2);
  d.width = images.dim(3);
  ENGINE_CHECK(mean.size() == std.size() && (mean.empty() || std::ssize(mean) == d.channels),
               "batch_as_dataset: {} means and {} deviations for {} channels", mean.size(), std.size(),
               d.channels);
  const std::int64_t n = std::min(images.dim(0), max_images), plane = d.height * d.width;
  ENGINE_CHECK(!is_blocked(images.layout()), "batch_as_dataset: {} is blocked (transpose it to NCHW first)",
               images.str());
  const bool nhwc = images.layout() == Layout::NHWC;
  const float* x = images.data<float>();
  d.images.resize(static_cast<std::size_t>(n * d.channels * plane));
  for (std::int64_t i = 0; i < n * d.channels * plane; ++i) {  // i: the NCHW position
    const std::int64_t image = i / (d.channels * plane), c = (i / plane) % d.channels, p = i % plane;
    const auto v = static_cast<double>(x[nhwc ? (image * plane + p) * d.channels + c : i]);
    const auto k = static_cast<std::size_t>(c);
    const double unit = mean.empty() ? v : v * static_cast<double>(std[k]) + static_cast<double>(mean[k]);
    d.images[static_cast<std::size_t>(i)] =
        static_cast<std::uint8_t>(std::clamp(std::lround(unit * 255.0), 0L, 255L));
  }
  const std::int32_t* y = labels.data<std::int32_t>();
  d.labels.assign(y, y + n);
  d.class_names = std::move(class_names);
  data::validate(d, "the training batch");
  return d;
}

data::Image make_captioned_grid(const data::Dataset& d, const std::vector<std::int64_t>& indices,
                                const std::vector<std::string>& captions, int cols) {
  ENGINE_CHECK(cols > 0, "grid of {} columns", cols);
  ENGINE_CHECK(!indices.empty(), "no samples to draw");
  ENGINE_CHECK(captions.size() == indices.size(), "{} captions for {} samples", captions.size(),
               indices.size());
  ENGINE_CHECK(d.channels == 1 || d.channels == 3 || d.channels == 4, "cannot draw {}-channel images",
               d.channels);
  for (const std::int64_t i : indices)
    ENGINE_CHECK(i >= 0 && i < d.size(), "sample {} is outside the dataset's {}", i, d.size());
  const auto count = static_cast<std::int64_t>(indices.size());
  const std::int64_t used_rows = (count + cols - 1) / cols;
  const std::int64_t used_cols = std::min<std::int64_t>(count, cols);
  const std::int64_t scale = std::max<std::int64_t>(1, (64 + d.height - 1) / d.height);
  // As wide as the widest caption line at 1:1, so that none is cut ("true: Ankle boo" before).
  std::int64_t widest = 40;
  for (const std::string& caption : captions) {
    for (const std::string& line : lines_of(caption))
      widest = std::max<std::int64_t>(widest, text_width(line));
  }
  const std::int64_t cell_w = std::max<std::int64_t>(d.width * scale, widest) + kPad;
  // Captions twice as large when every line and every class name fits the cell that way (MNIST's digits),
  // else 1:1.
  int text_scale = 2;
  for (const auto& name : d.class_names) {
    if (text_width(name) * 2 > cell_w - kPad) text_scale = 1;
  }
  std::size_t lines = 1;
  for (const std::string& caption : captions) {
    const std::vector<std::string> parts = lines_of(caption);
    lines = std::max(lines, parts.size());
    for (const std::string& line : parts) {
      if (text_width(line) * 2 > cell_w - kPad) text_scale = 1;
    }
  }
  const std::int64_t text_h = kTextHeight * text_scale;
  const std::int64_t cell_h = d.height * scale + text_h * static_cast<std::int64_t>(lines) + kPad;

  Canvas canvas(kPad + used_rows * cell_h, kPad + used_cols * cell_w, kBackground);
  const std::int64_t plane = d.height * d.width;
  for (std::int64_t k = 0; k < count; ++k) {
    const std::int64_t top = kPad + (k / cols) * cell_h;
    const std::int64_t left = kPad + (k % cols) * cell_w;
    std::vector<std::uint8_t> pixels(static_cast<std::size_t>(d.image_bytes()));
    data::read_sample(d, indices[static_cast<std::size_t>(k)], 0, pixels.data());  // memory or disk
    const std::uint8_t* image = pixels.data();
    for (std::int64_t y = 0; y < d.height * scale; ++y) {
      for (std::int64_t x = 0; x < d.width * scale; ++x) {
        const std::int64_t src = (y / scale) * d.width + x / scale;
        for (int c = 0; c < 3; ++c) {
          const std::int64_t channel = d.channels == 1 ? 0 : c;
          canvas.set(top + y, left + x, c, image[channel * plane + src]);
        }
      }
    }
    std::int64_t y = top + d.height * scale + 2;
    for (const std::string& line : lines_of(captions[static_cast<std::size_t>(k)])) {
      canvas.text(left, y, line, cell_w - kPad, text_scale, kText);
      y += text_h;
    }
  }
  return std::move(canvas).image();
}

}  // namespace engine::apps
