// cnn_train's defaults per model (apps/train/model_defaults.h; issue 28): every model has a batch size and a
// rate,
// --model (or the dataset's default model) picks them, a flag given wins, --recipe sets its own, --help says
// them.
#include "apps/train/model_defaults.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "apps/train/recipe.h"
#include "apps/train/train_config.h"
#include "apps/train_flags.h"
#include "core/error.h"
#include "layers/models.h"

namespace engine::apps {
namespace {

// The config cnn_train resolves from `args` (CLI11 takes them in reverse order).
TrainConfig resolve(std::vector<std::string> args) {
  TrainConfig c;
  CLI::App app;
  add_train_flags(app, c);
  app.parse(std::vector<std::string>(args.rbegin(), args.rend()));
  finish_train_config(app, c);
  return c;
}

TEST(ModelDefaults, EveryModelHasARow) {
  const std::vector<std::string> models = layers::model_names();
  ASSERT_EQ(model_defaults_table().size(), models.size());
  for (std::size_t i = 0; i < models.size(); ++i) {
    EXPECT_EQ(model_defaults_table()[i].model, models[i]);
    EXPECT_GT(model_defaults_table()[i].batch_size, 0);
    EXPECT_GT(model_defaults_table()[i].lr, 0.0);
  }
  EXPECT_THROW(model_defaults("alexnet"), Error);
}

TEST(ModelDefaults, TheModelPicksBatchSizeAndRate) {
  const TrainConfig cnn3 = resolve({"--dataset", "cifar10", "--model", "cnn3"});
  EXPECT_EQ(cnn3.batch_size, model_defaults("cnn3").batch_size);
  EXPECT_EQ(cnn3.lr, model_defaults("cnn3").lr);
  EXPECT_LT(cnn3.lr, 0.1);  // 0.1 leaves cnn3 at chance (issue 28)
  const TrainConfig resnet = resolve({"--dataset", "cifar10", "--model", "resnet18"});
  EXPECT_EQ(resnet.lr, 0.1);
  // Without --model, the dataset's default model's.
  const TrainConfig mnist = resolve({"--dataset", "fashion-mnist"});
  EXPECT_EQ(mnist.model, "mnist_cnn");
  EXPECT_EQ(mnist.batch_size, model_defaults("mnist_cnn").batch_size);
  EXPECT_EQ(mnist.lr, model_defaults("mnist_cnn").lr);
  const TrainConfig cifar = resolve({"--dataset", "cifar10"});
  EXPECT_EQ(cifar.model, "vgg6");
  EXPECT_EQ(cifar.lr, model_defaults("vgg6").lr);
}

TEST(ModelDefaults, AFlagGivenWins) {
  const TrainConfig c =
      resolve({"--dataset", "cifar10", "--model", "cnn3", "--lr", "0.1", "--batch-size", "64"});
  EXPECT_EQ(c.lr, 0.1);
  EXPECT_EQ(c.batch_size, 64);
  const TrainConfig lr_only = resolve({"--dataset", "cifar10", "--model", "cnn3", "--lr", "0.5"});
  EXPECT_EQ(lr_only.lr, 0.5);
  EXPECT_EQ(lr_only.batch_size, model_defaults("cnn3").batch_size);
  // --recipe airbench94 sets its own, over the model's defaults and under the flags given.
  const TrainConfig recipe = resolve({"--dataset", "cifar10", "--recipe", "airbench94"});
  EXPECT_EQ(recipe.batch_size, 1024);
  EXPECT_DOUBLE_EQ(recipe.lr, airbench94_lr(1024));
  const TrainConfig recipe_lr = resolve({"--dataset", "cifar10", "--recipe", "airbench94", "--lr", "0.3"});
  EXPECT_EQ(recipe_lr.lr, 0.3);
}

TEST(ModelDefaults, TheHelpSaysThem) {
  TrainConfig c;
  CLI::App app;
  add_train_flags(app, c);
  const std::string help = app.help();
  for (const ModelDefaults& d : model_defaults_table()) {
    EXPECT_NE(help.find(fmt::format("{} for {}", d.lr, d.model)), std::string::npos) << d.model << help;
    EXPECT_NE(help.find(fmt::format("{} for {}", d.batch_size, d.model)), std::string::npos) << d.model;
  }
}

}  // namespace
}  // namespace engine::apps
