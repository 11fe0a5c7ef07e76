#include "apps/train/epoch_log.h"

#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.h"

namespace engine::apps {

std::string with_thousands(std::int64_t value) {
  const std::string digits = std::to_string(value < 0 ? -value : value);
  std::string out = value < 0 ? "-" : "";
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return out;
}

std::string format_epoch_line(const std::string& device_label, const EpochMetrics& m) {
  return fmt::format(
             "{} Epoch {} | Batchsize: {} | Steps: {} | LR: {:.4f} | Loss: {:.4f} | Acc: {:.2f}% | Test "
             "Loss: "
             "{:.4f} | "
             "Test Acc: {:.2f}% | Time: {:.2f}s | {} img/s | Mem: {} MB",
             device_label, m.epoch, m.batch_size, m.steps, m.lr, m.train_loss, m.train_acc, m.test_loss,
             m.test_acc, m.seconds, with_thousands(std::llround(m.images_per_second)),
             std::llround(m.memory_mb)) +
         (m.bad_images_skipped > 0 ? fmt::format(" | Skipped: {} bad images", m.bad_images_skipped) : "");
}

std::string format_metrics_json(const EpochMetrics& m) {
  const nlohmann::ordered_json j = {{"epoch", m.epoch},
                                    {"batch_size", m.batch_size},
                                    {"world_size", m.world_size},
                                    {"steps", m.steps},
                                    {"lr", m.lr},
                                    {"train_loss", m.train_loss},
                                    {"train_acc", m.train_acc},
                                    {"test_loss", m.test_loss},
                                    {"test_acc", m.test_acc},
                                    {"seconds", m.seconds},
                                    {"elapsed_seconds", m.elapsed_seconds},
                                    {"images_per_second", m.images_per_second},
                                    {"memory_mb", m.memory_mb},
                                    {"precision", m.precision}};
  return j.dump();
}

namespace {

// A number of format_history_json's objects: a NaN or infinite one was written as null.
double number(const nlohmann::json& j, const char* key) {
  const nlohmann::json& v = j.at(key);
  return v.is_null() ? std::nan("") : v.get<double>();
}

}  // namespace

std::string format_history_json(const std::vector<EpochMetrics>& history) {
  nlohmann::ordered_json all = nlohmann::ordered_json::array();
  for (const EpochMetrics& m : history) {
    all.push_back({{"epoch", m.epoch},
                   {"lr", m.lr},
                   {"train_loss", m.train_loss},
                   {"train_acc", m.train_acc},
                   {"test_loss", m.test_loss},
                   {"test_acc", m.test_acc}});
  }
  return all.dump();
}

std::vector<EpochMetrics> parse_history_json(const std::string& text) {
  std::vector<EpochMetrics> out;
  try {
    const nlohmann::json all = nlohmann::json::parse(text);
    ENGINE_CHECK(all.is_array(), "epoch history: not a JSON array");
    for (const nlohmann::json& j : all) {
      EpochMetrics m;
      m.epoch = j.at("epoch").get<std::int64_t>();
      m.lr = number(j, "lr");
      m.train_loss = number(j, "train_loss");
      m.train_acc = number(j, "train_acc");
      m.test_loss = number(j, "test_loss");
      m.test_acc = number(j, "test_acc");
      out.push_back(m);
    }
  } catch (const nlohmann::json::exception& e) {
    ENGINE_FAIL("epoch history: {}", e.what());
  }
  return out;
}

}  // namespace engine::apps
