#include "apps/data_grid.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <stb_easy_font.h>

#include "core/error.h"

namespace engine::apps {
namespace {

constexpr int kPad = 4;          // pixels between cells and around the sheet
constexpr int kTextHeight = 12;  // stb_easy_font's line height
constexpr std::uint8_t kBackground = 24;
constexpr std::uint8_t kText = 235;

struct Canvas {
  std::int64_t height, width;
  std::vector<std::uint8_t> rgb;  // 3 x height x width
  void set(std::int64_t y, std::int64_t x, int c, std::uint8_t v) {
    if (y >= 0 && y < height && x >= 0 && x < width)
      rgb[static_cast<std::size_t>((c * height + y) * width + x)] = v;
  }
};

std::string printable(std::string text) {
  for (char& ch : text) {
    if (ch < 32 || ch > 126) ch = '?';  // the font has printable ASCII only (and indexes a table by it)
  }
  return text;
}

int text_width(const std::string& text) {
  std::string copy = printable(text);
  return stb_easy_font_width(copy.data());
}

// Text at (x0, y0), each font pixel drawn as scale x scale, cut to max_width pixels. stb_easy_font builds
// text from axis-aligned quads (4 vertices of 16 bytes: x, y, z floats and a colour); filling each quad's
// pixel rectangle rasterizes it.
void draw_text(Canvas& canvas, std::int64_t x0, std::int64_t y0, const std::string& label,
               std::int64_t max_width, int scale) {
  std::string text = printable(label);
  while (!text.empty() && stb_easy_font_width(text.data()) * scale > max_width) text.pop_back();
  std::vector<char> vertices(text.size() * 300 * 4 + 1024);
  const int quads = stb_easy_font_print(0.0f, 0.0f, text.data(), nullptr, vertices.data(),
                                        static_cast<int>(vertices.size()));
  for (int q = 0; q < quads; ++q) {
    float v0[2], v2[2];  // the first and third corners
    std::memcpy(v0, vertices.data() + (q * 4 + 0) * 16, sizeof(v0));
    std::memcpy(v2, vertices.data() + (q * 4 + 2) * 16, sizeof(v2));
    const auto xa = std::lround(v0[0]) * scale, xb = std::lround(v2[0]) * scale;
    const auto ya = std::lround(v0[1]) * scale, yb = std::lround(v2[1]) * scale;
    for (auto y = std::min(ya, yb); y < std::max(ya, yb); ++y)
      for (auto x = std::min(xa, xb); x < std::max(xa, xb); ++x)
        for (int c = 0; c < 3; ++c) canvas.set(y0 + y, x0 + x, c, kText);
  }
}

}  // namespace

data::Image make_sample_grid(const data::Dataset& d, int rows, int cols) {
  ENGINE_CHECK(rows > 0 && cols > 0, "grid of {} x {} cells", rows, cols);
  ENGINE_CHECK(d.size() > 0, "no samples to draw");
  ENGINE_CHECK(d.channels == 1 || d.channels == 3 || d.channels == 4, "cannot draw {}-channel images",
               d.channels);
  const std::int64_t count = std::min<std::int64_t>(d.size(), std::int64_t{rows} * cols);
  const std::int64_t used_rows = (count + cols - 1) / cols;
  const std::int64_t used_cols = std::min<std::int64_t>(count, cols);
  const std::int64_t scale = std::max<std::int64_t>(1, (64 + d.height - 1) / d.height);
  const std::int64_t cell_w = std::max<std::int64_t>(d.width * scale, 40) + kPad;
  // Labels twice as large when every class name fits the cell that way (MNIST's digits), else 1:1.
  int text_scale = 2;
  for (const auto& name : d.class_names) {
    if (text_width(name) * 2 > cell_w - kPad) text_scale = 1;
  }
  const std::int64_t cell_h = d.height * scale + kTextHeight * text_scale + kPad;

  Canvas canvas{kPad + used_rows * cell_h, kPad + used_cols * cell_w, {}};
  ENGINE_CHECK(canvas.height <= 16384 && canvas.width <= 16384, "grid of {}x{} pixels is too large",
               canvas.height, canvas.width);
  canvas.rgb.assign(static_cast<std::size_t>(3 * canvas.height * canvas.width), kBackground);
  const std::int64_t plane = d.height * d.width;
  for (std::int64_t i = 0; i < count; ++i) {
    const std::int64_t top = kPad + (i / cols) * cell_h;
    const std::int64_t left = kPad + (i % cols) * cell_w;
    const std::uint8_t* image = d.image(i);
    for (std::int64_t y = 0; y < d.height * scale; ++y) {
      for (std::int64_t x = 0; x < d.width * scale; ++x) {
        const std::int64_t src = (y / scale) * d.width + x / scale;
        for (int c = 0; c < 3; ++c) {
          const std::int64_t channel = d.channels == 1 ? 0 : c;
          canvas.set(top + y, left + x, c, image[channel * plane + src]);
        }
      }
    }
    const auto label = static_cast<std::size_t>(d.labels[static_cast<std::size_t>(i)]);
    draw_text(canvas, left, top + d.height * scale + 2, d.class_names[label], cell_w - kPad, text_scale);
  }
  return data::Image{3, canvas.height, canvas.width, std::move(canvas.rgb)};
}

}  // namespace engine::apps
