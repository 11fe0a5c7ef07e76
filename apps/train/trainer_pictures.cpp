// --confusion and --misclassified: one more pass over the test set with the final weights, keeping each
// prediction (one process: the test loader walks the set in order, so the k-th prediction is sample k).

#include <algorithm>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "apps/pictures/confusion_matrix.h"
#include "apps/pictures/data_grid.h"
#include "apps/train/trainer.h"
#include "apps/train/trainer_internal.h"
#include "core/error.h"

namespace engine::apps {

using namespace trainer_internal;  // the Trainer's own helpers (trainer_internal.h)

namespace {

constexpr std::size_t kMostMisclassifiedShown = 64;

// Row r's largest logit (the first on ties, as the loss's accuracy counts), from float32 or bf16 logits.
std::vector<int> argmax_rows(const Tensor& host_logits) {
  const std::int64_t rows = host_logits.dim(0), cols = host_logits.dim(1);
  std::vector<float> values(static_cast<std::size_t>(rows * cols));
  if (host_logits.dtype() == DType::BF16) {
    const bfloat16* bits = host_logits.data<bfloat16>();
    for (std::size_t i = 0; i < values.size(); ++i) {
      const std::uint32_t wide = static_cast<std::uint32_t>(bits[i].bits) << 16;
      std::memcpy(&values[i], &wide, sizeof(float));
    }
  } else {
    ENGINE_CHECK(host_logits.dtype() == DType::F32, "--confusion: logits of dtype {}",
                 dtype_name(host_logits.dtype()));
    std::memcpy(values.data(), host_logits.data<float>(), values.size() * sizeof(float));
  }
  std::vector<int> best(static_cast<std::size_t>(rows));
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* row = values.data() + r * cols;
    best[static_cast<std::size_t>(r)] = static_cast<int>(std::max_element(row, row + cols) - row);
  }
  return best;
}

}  // namespace

void Trainer::write_evaluation_pictures() {
  const TrainConfig& c = config_;
  const data::Dataset& test = data_.test;
  void* stream = device_->context().stream;
  ConfusionMatrix matrix(static_cast<int>(test.num_classes()));
  std::vector<std::int64_t> wrong;
  std::vector<std::string> captions;
  const bool on_average = c.eval_ema && ema_ && ema_->initialized();  // what evaluate() measured
  if (on_average) ema_->swap_with_weights();
  test_loader_->start_epoch(0);
  std::int64_t index = 0;
  for (data::Batch batch; test_loader_->next(batch);) {
    const Tensor logits = model_->forward(batch.images, layers::Mode::Inference);
    const std::vector<int> predicted = argmax_rows(logits.to(Device::cpu(), stream));
    const Tensor labels = batch.labels.to(Device::cpu(), stream);
    for (std::int64_t i = 0; i < batch.size(); ++i, ++index) {
      const int truth = labels.data<std::int32_t>()[i], guess = predicted[static_cast<std::size_t>(i)];
      matrix.add(truth, guess);
      if (truth != guess && wrong.size() < kMostMisclassifiedShown) {
        wrong.push_back(index);
        captions.push_back(fmt::format("true: {}\npred: {}",
                                       test.class_names[static_cast<std::size_t>(truth)],
                                       test.class_names[static_cast<std::size_t>(guess)]));
      }
    }
  }
  if (on_average) ema_->swap_with_weights();
  ENGINE_CHECK(index == test.size(), "--confusion: {} predictions for {} test samples (a bug)", index,
               test.size());
  if (!c.confusion.empty()) {
    data::write_png(c.confusion, matrix.image(test.class_names));
    print_line(fmt::format("cnn_train: wrote the confusion matrix ({} of {} test samples right) to {}",
                           matrix.correct(), matrix.total(), c.confusion));
  }
  if (!c.misclassified.empty()) {
    if (wrong.empty()) {
      print_line(fmt::format("cnn_train: --misclassified {}: no test image is misclassified; nothing drawn",
                             c.misclassified));
    } else {
      data::write_png(c.misclassified, make_captioned_grid(test, wrong, captions, 8));
      print_line(fmt::format("cnn_train: drew {} misclassified test image(s){} to {}", wrong.size(),
                             wrong.size() == kMostMisclassifiedShown ? " (the first)" : "", c.misclassified));
    }
  }
  if (!c.metrics.empty()) {
    std::ofstream metrics(c.metrics, std::ios::app);
    metrics << "{\"confusion_matrix\": " << matrix.to_json(test.class_names) << "}\n";
    ENGINE_CHECK(metrics.good(), "--metrics '{}': cannot write the file", c.metrics);
  }
}

}  // namespace engine::apps
