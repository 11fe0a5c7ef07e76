#pragma once
// The confusion matrix of a classifier on a test set: counts[true][predicted], per-class accuracy, the
// numbers as JSON (the metrics file) and as a picture (a heat map with the counts, rows the true class).

#include <cstdint>
#include <string>
#include <vector>

#include "data/image_codec.h"

namespace engine::apps {

class ConfusionMatrix {
 public:
  explicit ConfusionMatrix(int classes);

  // Throws engine::Error for a class outside [0, classes).
  void add(int true_class, int predicted_class, std::int64_t count = 1);
  void add(const ConfusionMatrix& other);  // the same number of classes

  int classes() const { return classes_; }
  std::int64_t count(int true_class, int predicted_class) const;
  std::int64_t total() const;
  std::int64_t correct() const;  // the diagonal
  // Of the samples of `true_class`, the fraction predicted as it (0 for a class without samples).
  double recall(int true_class) const;
  const std::vector<std::int64_t>& counts() const { return counts_; }  // row-major, true class first

  // {"classes": [...], "counts": [[...], ...]} (`names` may be empty: then the indices).
  std::string to_json(const std::vector<std::string>& names) const;
  // The heat map: cell brightness from the row's fraction (so small classes read as well as large ones),
  // the count written in each cell, the class names along the rows and columns, each row's recall at its end.
  data::Image image(const std::vector<std::string>& names) const;

 private:
  int classes_;
  std::vector<std::int64_t> counts_;
};

}  // namespace engine::apps
