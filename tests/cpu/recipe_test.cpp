// --recipe airbench94 (apps/train/recipe.h): the values it presets (airbench94.py's, translated to a mean
// loss), a flag given on the command line winning over it, its refusal of datasets it does not fit, its
// parameter groups selecting what airbench freezes and scales in the airbench model, and --help showing it.

#include "apps/train/recipe.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "apps/train/model_defaults.h"
#include "apps/train/train_config.h"
#include "apps/train_flags.h"
#include "layers/models.h"
#include "optim/param_groups.h"
#include "tests/common/error_of.h"
#include "tests/cpu/cnn_train_test_util.h"
#include "tests/cpu/layer_test_util.h"

namespace engine::apps {
namespace {

TrainConfig parsed(const std::string& args) {
  TrainConfig c;
  CLI::App app;
  add_train_flags(app, c);
  app.parse(args, /*program_name_included=*/false);
  finish_train_config(app, c);
  return c;
}

TEST(Recipe, Airbench94PresetsEveryHyperparameter) {
  const TrainConfig c = parsed("--dataset cifar10 --recipe airbench94");
  EXPECT_EQ(c.model, "airbench");
  EXPECT_EQ(c.batch_size, 1024);
  EXPECT_EQ(c.epochs, 10);
  // airbench94.py: lr 11.5 per 1024 examples over 1024 (1 + 1/(1 - 0.85)), on a summed loss; our mean loss
  // needs it times the batch: 11.5 / 7.6667 = 1.5. Weight decay 0.0153 * 1024 / 11.5 per summed-loss step,
  // divided by the batch: 0.0153 / 11.5.
  EXPECT_NEAR(c.lr, 1.5, 1e-12);
  EXPECT_DOUBLE_EQ(c.weight_decay, 0.0153 / 11.5);
  EXPECT_EQ(c.momentum, 0.85);
  EXPECT_TRUE(c.nesterov);
  EXPECT_EQ(c.schedule, optim::ScheduleKind::Triangle);
  EXPECT_EQ(c.schedule_unit, optim::ScheduleUnit::Step);
  EXPECT_EQ(c.triangle_start, 0.2);
  EXPECT_EQ(c.triangle_peak, 0.23);
  EXPECT_EQ(c.triangle_end, 0.07);
  EXPECT_EQ(c.label_smoothing, 0.2);
  EXPECT_EQ(c.ema_every, 5);
  EXPECT_EQ(c.ema_start_epoch, 3);
  EXPECT_EQ(c.ema_decay, 0.95);
  EXPECT_EQ(c.ema_decay_pow, 3.0);
  EXPECT_EQ(c.ema_mode, EmaMode::Lookahead);
  EXPECT_EQ(c.augment, Augment::FlipTranslate);
  EXPECT_EQ(c.translate, 2);
  EXPECT_EQ(c.tta, 2);
  EXPECT_EQ(c.whiten_init, 5000);  // airbench94 whitens from train_images[:5000]
  ASSERT_EQ(c.param_groups.size(), 5u);
  EXPECT_EQ(c.param_groups[0], "0.weight:frozen");
  EXPECT_EQ(c.param_groups[1], "0.bias:epochs=3");  // airbench94: whiten_bias_epochs = 3
  EXPECT_EQ(c.param_groups[2], "norm1.weight:frozen");
  EXPECT_EQ(c.param_groups[3], "norm2.weight:frozen");
  const optim::ParamGroupRule bias = optim::parse_param_group_rule(c.param_groups[4]);
  EXPECT_EQ(bias.selector, "norm");
  EXPECT_EQ(bias.lr_scale, 64.0);
  ASSERT_TRUE(bias.weight_decay.has_value());
  // airbench: weight_decay = wd / lr_biases, i.e. the other groups' over 64 (the rate, not the decay,
  // scaled).
  EXPECT_DOUBLE_EQ(*bias.weight_decay, 0.0153 / 11.5 / 64.0);
}

TEST(Recipe, WithoutItNothingChanges) {
  const TrainConfig c = parsed("--dataset cifar10");
  EXPECT_EQ(c.model, "vgg6");
  EXPECT_EQ(c.batch_size, model_defaults("vgg6").batch_size);  // the model's plain defaults
  EXPECT_EQ(c.lr, model_defaults("vgg6").lr);
  EXPECT_TRUE(c.param_groups.empty());
  EXPECT_EQ(c.tta, 0);
}

TEST(Recipe, AFlagGivenExplicitlyWins) {
  const TrainConfig c = parsed(
      "--dataset cifar10 --recipe airbench94 --epochs 2 --batch-size 256 --momentum 0.9 --tta 0 --augment "
      "none "
      "--param-group BatchNorm2d.bias:lr=2 --ema-every 0 --label-smoothing 0");
  EXPECT_EQ(c.epochs, 2);
  EXPECT_EQ(c.batch_size, 256);
  EXPECT_EQ(c.momentum, 0.9);
  EXPECT_EQ(c.tta, 0);
  EXPECT_EQ(c.augment, Augment::None);
  EXPECT_EQ(c.param_groups, (std::vector<std::string>{"BatchNorm2d.bias:lr=2"}));
  EXPECT_EQ(c.ema_every, 0);
  EXPECT_EQ(c.label_smoothing, 0.0);
  // Not given: still the recipe's. The rate follows the batch (airbench's summed loss): 1.5 * 256 / 1024.
  EXPECT_EQ(c.model, "airbench");
  EXPECT_NEAR(c.lr, 0.375, 1e-12);
  EXPECT_EQ(c.schedule, optim::ScheduleKind::Triangle);
  const TrainConfig with_lr = parsed("--dataset cifar10 --recipe airbench94 --lr 0.3 --model cnn3");
  EXPECT_EQ(with_lr.lr, 0.3);
  EXPECT_EQ(with_lr.model, "cnn3");
  // --accumulate K makes the optimizer's batch K times larger, and the rate with it.
  EXPECT_NEAR(parsed("--dataset cifar10 --recipe airbench94 --batch-size 256 --accumulate 2").lr, 0.75,
              1e-12);
}

TEST(Recipe, RefusesDatasetsItDoesNotFit) {
  const std::string e = engine::testing::error_of([] { parsed("--dataset mnist --recipe airbench94"); });
  EXPECT_NE(e.find("--recipe airbench94"), std::string::npos) << e;
  EXPECT_NE(e.find("'mnist'"), std::string::npos) << e;
  EXPECT_NO_THROW(parsed("--dataset folder:/nowhere --recipe airbench94"));  // folders decode to 32x32 RGB
}

TEST(Recipe, ItsParameterGroupsSelectWhatAirbenchFreezesAndScales) {
  layers::Model m = layers::build_model("airbench", 3, 10, 32, 32);
  m.finalize(layers::testing::cpu_context(), 1);
  std::vector<optim::ParamGroupRule> rules;
  for (const std::string& r : airbench94_param_groups()) rules.push_back(optim::parse_param_group_rule(r));
  const double wd = airbench94_weight_decay();
  EXPECT_TRUE(optim::param_groups_change_with_epoch(rules));
  // Epochs 0-2 (the whitening bias trains) and 3 on (airbench: requires_grad = epoch < 3, so frozen).
  for (const std::int64_t epoch : {0, 2, 3, 9}) {
    const auto tiles =
        cpu::tile_sgd_groups(optim::param_groups_for(m, rules, wd, epoch), wd, m.flat_parameters().numel());
    // Each parameter's settings: the tile holding its first element.
    for (const layers::Parameter& p : m.parameters()) {
      const cpu::SgdGroup* tile = nullptr;
      for (const cpu::SgdGroup& t : tiles) {
        if (t.begin <= p.offset && p.offset < t.end) tile = &t;
      }
      ASSERT_NE(tile, nullptr) << p.name;
      const bool frozen = p.name == "0.weight" || (p.name == "0.bias" && epoch >= 3) ||
                          p.name.ends_with("norm1.weight") || p.name.ends_with("norm2.weight");
      const bool norm_bias = p.name.find("norm") != std::string::npos && p.name.ends_with(".bias");
      EXPECT_EQ(tile->frozen, frozen) << p.name;
      EXPECT_EQ(tile->lr_scale, norm_bias ? 64.0 : 1.0) << p.name;
      if (!frozen) {
        EXPECT_DOUBLE_EQ(tile->weight_decay, norm_bias ? wd / 64.0 : wd) << p.name;
      }
    }
  }
}

TEST(Recipe, HelpShowsIt) {
  const testing::RunResult r = testing::run_train({"--help"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("--recipe"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("airbench94"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace engine::apps
