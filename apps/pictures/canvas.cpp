#include "apps/pictures/canvas.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include <stb_easy_font.h>

#include "core/error.h"

namespace engine::apps {
namespace {

std::string printable(std::string text) {
  for (char& ch : text) {
    if (ch < 32 || ch > 126) ch = '?';  // the font has printable ASCII only (and indexes a table by it)
  }
  return text;
}

}  // namespace

Canvas::Canvas(std::int64_t h, std::int64_t w, std::uint8_t background) : height(h), width(w) {
  ENGINE_CHECK(h > 0 && w > 0 && h <= 16384 && w <= 16384, "a picture of {}x{} pixels is too large", h, w);
  rgb.assign(static_cast<std::size_t>(3 * h * w), background);
}

void Canvas::fill(std::int64_t top, std::int64_t left, std::int64_t h, std::int64_t w,
                  const std::uint8_t (&colour)[3]) {
  for (std::int64_t y = top; y < top + h; ++y)
    for (std::int64_t x = left; x < left + w; ++x)
      for (int c = 0; c < 3; ++c) set(y, x, c, colour[c]);
}

// stb_easy_font builds text from axis-aligned quads (4 vertices of 16 bytes: x, y, z floats and a colour);
// filling each quad's pixel rectangle rasterizes it.
void Canvas::text(std::int64_t x0, std::int64_t y0, const std::string& label, std::int64_t max_width,
                  int scale, std::uint8_t grey) {
  std::string t = printable(label);
  while (!t.empty() && stb_easy_font_width(t.data()) * scale > max_width) t.pop_back();
  std::vector<char> vertices(t.size() * 300 * 4 + 1024);
  const int quads =
      stb_easy_font_print(0.0f, 0.0f, t.data(), nullptr, vertices.data(), static_cast<int>(vertices.size()));
  for (int q = 0; q < quads; ++q) {
    float v0[2], v2[2];  // the first and third corners
    std::memcpy(v0, vertices.data() + (q * 4 + 0) * 16, sizeof(v0));
    std::memcpy(v2, vertices.data() + (q * 4 + 2) * 16, sizeof(v2));
    const auto xa = std::lround(v0[0]) * scale, xb = std::lround(v2[0]) * scale;
    const auto ya = std::lround(v0[1]) * scale, yb = std::lround(v2[1]) * scale;
    for (auto y = std::min(ya, yb); y < std::max(ya, yb); ++y)
      for (auto x = std::min(xa, xb); x < std::max(xa, xb); ++x)
        for (int c = 0; c < 3; ++c) set(y0 + y, x0 + x, c, grey);
  }
}

data::Image Canvas::image() && { return data::Image{3, height, width, std::move(rgb)}; }

int text_width(const std::string& text) {
  std::string copy = printable(text);
  return stb_easy_font_width(copy.data());
}

}  // namespace engine::apps
