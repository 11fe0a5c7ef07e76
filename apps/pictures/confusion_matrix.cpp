#include "apps/pictures/confusion_matrix.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "apps/pictures/canvas.h"
#include "core/error.h"

namespace engine::apps {
namespace {

constexpr std::int64_t kCell = 44;  // a cell's side, in pixels
constexpr std::int64_t kPad = 6;
constexpr std::uint8_t kBackground = 255;
constexpr std::uint8_t kInk = 20;

std::string name_of(const std::vector<std::string>& names, int c) {
  return static_cast<std::size_t>(c) < names.size() ? names[static_cast<std::size_t>(c)] : std::to_string(c);
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (const char ch : s) {
    if (ch == '"' || ch == '\\') out += '\\';
    if (static_cast<unsigned char>(ch) < 0x20) continue;  // class names come from folder names
    out += ch;
  }
  return out + "\"";
}

}  // namespace

ConfusionMatrix::ConfusionMatrix(int classes)
    : classes_(classes), counts_(static_cast<std::size_t>(classes) * static_cast<std::size_t>(classes), 0) {
  ENGINE_CHECK(classes > 0, "a confusion matrix of {} classes", classes);
}

void ConfusionMatrix::add(int true_class, int predicted_class, std::int64_t count) {
  ENGINE_CHECK(true_class >= 0 && true_class < classes_ && predicted_class >= 0 && predicted_class < classes_,
               "confusion matrix of {} classes: class {} predicted as {}", classes_, true_class,
               predicted_class);
  counts_[static_cast<std::size_t>(true_class * classes_ + predicted_class)] += count;
}

void ConfusionMatrix::add(const ConfusionMatrix& other) {
  ENGINE_CHECK(other.classes_ == classes_, "adding a confusion matrix of {} classes to one of {}",
               other.classes_, classes_);
  for (std::size_t i = 0; i < counts_.size(); ++i) counts_[i] += other.counts_[i];
}

std::int64_t ConfusionMatrix::count(int true_class, int predicted_class) const {
  return counts_[static_cast<std::size_t>(true_class * classes_ + predicted_class)];
}

std::int64_t ConfusionMatrix::total() const {
  std::int64_t n = 0;
  for (const std::int64_t c : counts_) n += c;
  return n;
}

std::int64_t ConfusionMatrix::correct() const {
  std::int64_t n = 0;
  for (int c = 0; c < classes_; ++c) n += count(c, c);
  return n;
}

double ConfusionMatrix::recall(int true_class) const {
  std::int64_t row = 0;
  for (int p = 0; p < classes_; ++p) row += count(true_class, p);
  return row > 0 ? static_cast<double>(count(true_class, true_class)) / static_cast<double>(row) : 0.0;
}

std::string ConfusionMatrix::to_json(const std::vector<std::string>& names) const {
  std::string out = "{\"classes\": [";
  for (int c = 0; c < classes_; ++c) out += (c ? ", " : "") + json_string(name_of(names, c));
  out += "], \"counts\": [";
  for (int t = 0; t < classes_; ++t) {
    out += t ? ", [" : "[";
    for (int p = 0; p < classes_; ++p) out += fmt::format("{}{}", p ? ", " : "", count(t, p));
    out += "]";
  }
  return out + "]}";
}

data::Image ConfusionMatrix::image(const std::vector<std::string>& names) const {
  int label_w = 0;
  for (int c = 0; c < classes_; ++c) label_w = std::max(label_w, text_width(name_of(names, c)));
  const std::int64_t left = kPad + label_w + kPad, top = kPad + 2 * kTextHeight + kPad;
  // A column as wide as its widest class name, so that no name is cut ("T-shirt/", "Ankle boo" before).
  const std::int64_t col_w = std::max<std::int64_t>(kCell, label_w + 4);
  const std::int64_t recall_w = text_width("100.0%") + 2 * kPad;
  const std::string footer =
      fmt::format("rows: true class | {} of {} correct ({:.2f}%)", correct(), total(),
                  total() > 0 ? 100.0 * static_cast<double>(correct()) / static_cast<double>(total()) : 0.0);
  Canvas canvas(top + classes_ * kCell + kPad + kTextHeight + kPad,
                std::max(left + classes_ * col_w + recall_w, left + text_width(footer) + kPad), kBackground);
  canvas.text(left, kPad, "predicted ->", classes_ * col_w, 1, kInk);
  for (int c = 0; c < classes_; ++c) {
    canvas.text(left + c * col_w + 2, kPad + kTextHeight, name_of(names, c), col_w - 2, 1, kInk);
    canvas.text(kPad, top + c * kCell + kCell / 2 - kTextHeight / 2, name_of(names, c), label_w, 1, kInk);
  }
  for (int t = 0; t < classes_; ++t) {
    std::int64_t row = 0;
    for (int p = 0; p < classes_; ++p) row += count(t, p);
    for (int p = 0; p < classes_; ++p) {
      const double share = row > 0 ? static_cast<double>(count(t, p)) / static_cast<double>(row) : 0.0;
      // White for none to deep blue for the whole row; the diagonal should be the dark one.
      const auto fade = [&](int full) {
        return static_cast<std::uint8_t>(std::lround(255.0 - share * (255.0 - full)));
      };
      const std::uint8_t colour[3] = {fade(8), fade(48), fade(107)};
      canvas.fill(top + t * kCell, left + p * col_w, kCell - 1, col_w - 1, colour);
      const std::string n = std::to_string(count(t, p));
      canvas.text(left + p * col_w + (col_w - text_width(n)) / 2,
                  top + t * kCell + kCell / 2 - kTextHeight / 2, n, col_w - 2, 1, share > 0.5 ? 255 : kInk);
    }
    canvas.text(left + classes_ * col_w + kPad, top + t * kCell + kCell / 2 - kTextHeight / 2,
                fmt::format("{:.1f}%", 100.0 * recall(t)), recall_w, 1, kInk);
  }
  canvas.text(left, top + classes_ * kCell + kPad, footer, canvas.width - left, 1, kInk);
  return std::move(canvas).image();
}

}  // namespace engine::apps
