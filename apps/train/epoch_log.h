#pragma once
// What one epoch reports, and its two renderings: the log line PyTorch DDP users know
//   [GPU0] Epoch 3 | Batchsize: 128 | Steps: 391 | LR: 0.1000 | Loss: 1.0933 | Acc: 61.20% | Test
//   Loss: 1.0417 | Test Acc: 63.05% | Time: 2.13s | 23,400 img/s | Mem: 812 MB
// (one line), one JSON object per line for --metrics, and the run's history as one JSON array (kept in the
// checkpoints' metadata, so that a resumed run's --plot draws every epoch, the earlier runs' too).

#include <cstdint>
#include <string>
#include <vector>

namespace engine::apps {

struct EpochMetrics {
  std::int64_t epoch = 0;       // 1-based, as printed
  std::int64_t batch_size = 0;  // per process
  std::int64_t world_size = 1;  // processes (ranks) training together: a step sees world_size * batch_size
  std::int64_t steps = 0;
  double lr = 0.0;
  double train_loss = 0.0;  // mean over the epoch's training samples
  double train_acc = 0.0;   // percent
  double test_loss = 0.0;
  double test_acc = 0.0;         // percent
  double seconds = 0.0;          // the epoch's training time
  double elapsed_seconds = 0.0;  // wall time from this run's first step to the end of this epoch's evaluation
  double images_per_second = 0.0;  // over all ranks
  double memory_mb = 0.0;
  std::string precision;                // --precision: fp32, tf32, bf16
  std::int64_t bad_images_skipped = 0;  // --skip-bad-images: skipped by this process so far (shown when > 0)
};

std::string format_epoch_line(const std::string& device_label, const EpochMetrics& m);
std::string format_metrics_json(const EpochMetrics& m);
// The epochs' curves (epoch, lr, train and test loss and accuracy: the deterministic fields, so that a
// resumed run's checkpoints stay byte for byte an uninterrupted run's) as a JSON array, and back (each value
// round-trips; the other fields come back 0). Throws engine::Error for text that is not such an array.
std::string format_history_json(const std::vector<EpochMetrics>& history);
std::vector<EpochMetrics> parse_history_json(const std::string& text);
// 23400 -> "23,400".
std::string with_thousands(std::int64_t value);

}  // namespace engine::apps
