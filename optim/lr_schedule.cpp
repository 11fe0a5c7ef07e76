#include "optim/lr_schedule.h"

#include <charconv>
#include <cmath>
#include <numbers>

#include "core/error.h"

namespace engine::optim {

ScheduleKind parse_schedule_kind(std::string_view text) {
  if (text == "constant") return ScheduleKind::Constant;
  if (text == "step") return ScheduleKind::Step;
  if (text == "cosine") return ScheduleKind::Cosine;
  if (text == "triangle") return ScheduleKind::Triangle;
  ENGINE_FAIL("unknown schedule '{}': expected constant, step, cosine or triangle", text);
}

ScheduleUnit parse_schedule_unit(std::string_view text) {
  if (text == "epoch") return ScheduleUnit::Epoch;
  if (text == "step") return ScheduleUnit::Step;
  ENGINE_FAIL("unknown schedule unit '{}': expected epoch or step", text);
}

std::string_view schedule_kind_name(ScheduleKind kind) {
  switch (kind) {
    case ScheduleKind::Constant: return "constant";
    case ScheduleKind::Step: return "step";
    case ScheduleKind::Cosine: return "cosine";
    case ScheduleKind::Triangle: return "triangle";
  }
  return "?";
}

void LrScheduleConfig::validate() const {
  ENGINE_CHECK(std::isfinite(base_lr) && base_lr >= 0.0, "--lr {}: must be finite and >= 0", base_lr);
  ENGINE_CHECK(std::isfinite(gamma) && gamma > 0.0, "--gamma {}: must be finite and > 0", gamma);
  ENGINE_CHECK(warmup_epochs >= 0, "--warmup-epochs {}: must be >= 0", warmup_epochs);
  ENGINE_CHECK(total_epochs >= 1, "--epochs {}: must be >= 1", total_epochs);
  ENGINE_CHECK(steps_per_epoch >= 1, "LrSchedule: steps per epoch {}: must be >= 1", steps_per_epoch);
  ENGINE_CHECK(std::isfinite(triangle_start) && triangle_start >= 0.0, "--triangle-start {}: must be >= 0",
               triangle_start);
  ENGINE_CHECK(std::isfinite(triangle_end) && triangle_end >= 0.0, "--triangle-end {}: must be >= 0",
               triangle_end);
  ENGINE_CHECK(triangle_peak >= 0.0 && triangle_peak <= 1.0, "--triangle-peak {}: must be in [0, 1]",
               triangle_peak);
  if (kind == ScheduleKind::Step) {
    ENGINE_CHECK(!step_epochs.empty(), "--schedule step needs --step-epochs (e.g. 30 or 30,60)");
  }
  for (std::size_t i = 0; i < step_epochs.size(); ++i) {
    ENGINE_CHECK(step_epochs[i] > 0, "--step-epochs: {} is not a positive epoch", step_epochs[i]);
    ENGINE_CHECK(i == 0 || step_epochs[i] > step_epochs[i - 1],
                 "--step-epochs: {} after {} is not increasing", step_epochs[i], step_epochs[i - 1]);
  }
}

LrSchedule::LrSchedule(LrScheduleConfig config) : config_(std::move(config)) { config_.validate(); }

double LrSchedule::main_factor(std::int64_t x, std::int64_t per) const {
  const LrScheduleConfig& c = config_;
  const std::int64_t total = c.total_epochs * per;
  switch (c.kind) {
    case ScheduleKind::Constant: return 1.0;
    case ScheduleKind::Step: {
      std::int64_t decays = 0;
      if (c.step_epochs.size() == 1) {
        decays = x / (c.step_epochs[0] * per);
      } else {
        for (const std::int64_t m : c.step_epochs) decays += m * per <= x ? 1 : 0;
      }
      return std::pow(c.gamma, static_cast<double>(decays));
    }
    case ScheduleKind::Cosine:
      return (1.0 + std::cos(std::numbers::pi * static_cast<double>(x) / static_cast<double>(total))) / 2.0;
    case ScheduleKind::Triangle: {
      // Knots (0, start), (P, 1), (T, end); beyond T the end value holds. With P = 0 the rise is empty, with
      // P = T the fall is.
      const auto peak = static_cast<std::int64_t>(std::floor(c.triangle_peak * static_cast<double>(total)));
      if (x >= total) return c.triangle_end;
      if (x < peak) {
        return c.triangle_start +
               (1.0 - c.triangle_start) * static_cast<double>(x) / static_cast<double>(peak);
      }
      return 1.0 + (c.triangle_end - 1.0) * static_cast<double>(x - peak) / static_cast<double>(total - peak);
    }
  }
  return 1.0;
}

double LrSchedule::at(std::int64_t x, std::int64_t per) const {
  const std::int64_t w = config_.warmup_epochs * per;
  const double warmup = x < w ? static_cast<double>(x + 1) / static_cast<double>(w) : 1.0;
  return config_.base_lr * (warmup * main_factor(x, per));
}

double LrSchedule::lr(std::int64_t epoch) const {
  ENGINE_CHECK(epoch >= 0, "LrSchedule: epoch {} < 0", epoch);
  if (config_.unit == ScheduleUnit::Step) return lr_at_step(epoch * config_.steps_per_epoch);
  return at(epoch, 1);
}

double LrSchedule::lr_at_step(std::int64_t step) const {
  ENGINE_CHECK(step >= 0, "LrSchedule: step {} < 0", step);
  if (config_.unit == ScheduleUnit::Epoch) return at(step / config_.steps_per_epoch, 1);
  return at(step, config_.steps_per_epoch);
}

std::vector<std::int64_t> parse_epoch_list(std::string_view text) {
  std::vector<std::int64_t> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string_view item = text.substr(start, comma - start);
    std::int64_t v = 0;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    ENGINE_CHECK(!item.empty() && ec == std::errc() && end == item.data() + item.size() && v > 0,
                 "--step-epochs '{}': expected positive integers separated by commas", text);
    out.push_back(v);
    start = comma + 1;
  }
  return out;
}

}  // namespace engine::optim
