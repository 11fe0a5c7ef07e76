#pragma once
// An RGB canvas with stb_easy_font's bitmap text, for the pictures the programs draw (a dataset's contact
// sheet, the misclassified test images, the confusion matrix).

#include <cstdint>
#include <string>
#include <vector>

#include "data/image_codec.h"

namespace engine::apps {

inline constexpr int kTextHeight = 12;  // stb_easy_font's line height, in font pixels

struct Canvas {
  Canvas(std::int64_t h, std::int64_t w, std::uint8_t background);
  std::int64_t height, width;
  std::vector<std::uint8_t> rgb;  // 3 x height x width

  void set(std::int64_t y, std::int64_t x, int c, std::uint8_t v) {  // outside the canvas: nothing
    if (y >= 0 && y < height && x >= 0 && x < width)
      rgb[static_cast<std::size_t>((c * height + y) * width + x)] = v;
  }
  void fill(std::int64_t top, std::int64_t left, std::int64_t h, std::int64_t w,
            const std::uint8_t (&colour)[3]);
  // Text at (x0, y0), each font pixel drawn as scale x scale in `grey`, cut to max_width pixels.
  void text(std::int64_t x0, std::int64_t y0, const std::string& label, std::int64_t max_width, int scale,
            std::uint8_t grey);
  data::Image image() &&;  // the canvas as a 3-channel image
};

// The width of `text` in font pixels (at scale 1).
int text_width(const std::string& text);

}  // namespace engine::apps
