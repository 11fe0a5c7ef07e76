#include "apps/train/recipe.h"

#include <fmt/format.h>

#include "core/error.h"

namespace engine::apps {

namespace {

// airbench94.py's hyp['opt'] (the values the file sets; the derived ones below follow its main()).
constexpr double kLrPer1024 = 11.5;
constexpr double kWeightDecayPer1024 = 0.0153;
constexpr double kMomentum = 0.85;
constexpr double kBiasScaler = 64.0;
constexpr std::int64_t kBatchSize = 1024;

// Sets `field` to `value` unless `flag` was on the command line.
template <typename T, typename V>
void preset(const FlagGiven& given, const char* flag, T& field, const V& value) {
  if (!given(flag)) field = value;
}

void apply_airbench94(const FlagGiven& given, TrainConfig& c) {
  ENGINE_CHECK(c.dataset == "cifar10" || c.dataset.starts_with("folder:"),
               "--recipe airbench94 trains on CIFAR-10's 32x32 RGB images: --dataset cifar10 or folder:PATH "
               "(decoded to 32x32 RGB), not '{}'",
               c.dataset);
  preset(given, "--model", c.model, std::string("airbench"));
  c.model_given = true;  // the recipe names the model
  preset(given, "--batch-size", c.batch_size, kBatchSize);
  preset(given, "--epochs", c.epochs, std::int64_t{10});
  preset(given, "--lr", c.lr, airbench94_lr(c.batch_size * c.accumulate));
  preset(given, "--momentum", c.momentum, kMomentum);
  preset(given, "--nesterov", c.nesterov, true);
  preset(given, "--weight-decay", c.weight_decay, airbench94_weight_decay());
  preset(given, "--schedule", c.schedule, optim::ScheduleKind::Triangle);
  preset(given, "--schedule-unit", c.schedule_unit, optim::ScheduleUnit::Step);
  preset(given, "--triangle-start", c.triangle_start, 0.2);
  preset(given, "--triangle-peak", c.triangle_peak, 0.23);
  preset(given, "--triangle-end", c.triangle_end, 0.07);
  preset(given, "--param-group", c.param_groups, airbench94_param_groups());
  preset(given, "--label-smoothing", c.label_smoothing, 0.2);
  preset(given, "--ema-every", c.ema_every, std::int64_t{5});
  preset(given, "--ema-start-epoch", c.ema_start_epoch, std::int64_t{3});
  preset(given, "--ema-decay", c.ema_decay, 0.95);
  preset(given, "--ema-decay-pow", c.ema_decay_pow, 3.0);
  preset(given, "--ema-mode", c.ema_mode, EmaMode::Lookahead);
  preset(given, "--augment", c.augment, Augment::FlipTranslate);
  preset(given, "--translate", c.translate, 2);
  preset(given, "--tta", c.tta, 2);
  // The first conv from the eigenvectors of 2x2 patches of the first 5000 training images (airbench94's
  // init_whiten); its weights stay frozen (the param group above).
  preset(given, "--whiten-init", c.whiten_init, std::int64_t{5000});
}

}  // namespace

double airbench94_lr(std::int64_t batch) {
  const double kilostep_scale = 1024.0 * (1.0 + 1.0 / (1.0 - kMomentum));
  return kLrPer1024 / kilostep_scale * static_cast<double>(batch);
}

double airbench94_weight_decay() { return kWeightDecayPer1024 / kLrPer1024; }

std::vector<std::string> airbench94_param_groups() {
  // First match wins: the frozen weights, then every other BatchNorm ("norm") parameter, i.e. the biases.
  // Text selectors, as airbench's `'norm' in name`, so --sync-bn's SyncBatchNorm2d matches too.
  return {"0.weight:frozen", "0.bias:epochs=3", "norm1.weight:frozen", "norm2.weight:frozen",
          fmt::format("norm:lr={},wd={}", kBiasScaler, airbench94_weight_decay() / kBiasScaler)};
}

void apply_recipe(TrainConfig& config, const FlagGiven& given) {
  switch (config.recipe) {
    case Recipe::None: return;
    case Recipe::Airbench94: apply_airbench94(given, config); return;
  }
}

}  // namespace engine::apps
