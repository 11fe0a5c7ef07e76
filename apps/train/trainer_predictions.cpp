// Trainer::predict_test_set (--confusion and --misclassified): one more pass over the test set with the final
// weights, keeping each prediction (one process: the test loader walks the set in order, so the k-th
// prediction is sample k).

#include <algorithm>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "apps/train/trainer.h"
#include "core/error.h"

namespace engine::apps {

namespace {

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

std::vector<Trainer::Prediction> Trainer::predict_test_set() {
  const TrainConfig& c = config_;
  const data::Dataset& test = data_.test;
  void* stream = device_->context().stream;
  std::vector<Prediction> out;
  out.reserve(static_cast<std::size_t>(test.size()));
  const bool on_average = c.eval_ema && ema_ && ema_->initialized();  // what evaluate() measured
  if (on_average) ema_->swap_with_weights();
  test_loader_->start_epoch(0);
  for (data::Batch batch; test_loader_->next(batch);) {
    const Tensor logits = model_->forward(batch.images, layers::Mode::Inference);
    const std::vector<int> predicted = argmax_rows(logits.to(Device::cpu(), stream));
    const Tensor labels = batch.labels.to(Device::cpu(), stream);
    for (std::int64_t i = 0; i < batch.size(); ++i)
      out.push_back({labels.data<std::int32_t>()[i], predicted[static_cast<std::size_t>(i)]});
  }
  if (on_average) ema_->swap_with_weights();
  ENGINE_CHECK(static_cast<std::int64_t>(out.size()) == test.size(),
               "--confusion: {} predictions for {} test samples (a bug)", out.size(), test.size());
  return out;
}

}  // namespace engine::apps
