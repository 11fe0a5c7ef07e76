#include "apps/train/train_config.h"

namespace engine::apps {

optim::LrScheduleConfig TrainConfig::schedule_config(std::int64_t steps_per_epoch) const {
  optim::LrScheduleConfig c;
  c.kind = schedule;
  c.base_lr = lr;
  if (!step_epochs.empty()) c.step_epochs = optim::parse_epoch_list(step_epochs);
  c.gamma = gamma;
  c.warmup_epochs = warmup_epochs;
  c.total_epochs = epochs;
  c.unit = schedule_unit;
  c.steps_per_epoch = steps_per_epoch;
  c.triangle_start = triangle_start;
  c.triangle_peak = triangle_peak;
  c.triangle_end = triangle_end;
  return c;
}

}  // namespace engine::apps
