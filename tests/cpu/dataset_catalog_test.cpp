// The dataset catalog (apps/train/dataset_catalog.h) and the enum flags (apps/train/flag_choice.h): every
// entry is complete, names resolve as the flags expect, the catalog agrees with data/download.h on what can
// be downloaded, and a flag with a fixed set of values parses into its enum or fails naming flag and values.

#include "apps/train/dataset_catalog.h"

#include <algorithm>
#include <filesystem>
#include <type_traits>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "apps/ddp_flags.h"
#include "apps/train/ddp.h"
#include "apps/train/train_config.h"
#include "apps/train/trainer.h"
#include "apps/train_flags.h"
#include "data/data_home.h"
#include "data/download.h"
#include "data/idx.h"
#include "layers/models.h"

namespace engine::apps {
namespace {

TEST(DatasetCatalog, EveryEntryIsComplete) {
  const std::vector<std::string> models = layers::model_names();
  for (const DatasetEntry& e : dataset_catalog()) {
    SCOPED_TRACE(std::string(e.name));
    EXPECT_EQ(e.load != nullptr, !e.folder_in_name);  // one reader each: in memory, or a folder from disk
    EXPECT_EQ(e.load_folder != nullptr, e.folder_in_name);
    EXPECT_EQ(e.default_root == nullptr, e.folder_in_name);  // a folder's root is in its name
    EXPECT_EQ(e.mean.size(), e.std.size());
    EXPECT_NE(std::find(models.begin(), models.end(), std::string(e.default_model)), models.end());
    EXPECT_EQ(e.default_root_help == nullptr, e.folder_in_name);
  }
  EXPECT_TRUE(dataset_catalog().back().folder_in_name);  // "otherwise" in the help texts
}

TEST(DatasetCatalog, NamesResolveAsTheFlagsExpect) {
  ASSERT_NE(find_dataset("cifar10"), nullptr);
  EXPECT_EQ(find_dataset("cifar10")->name, "cifar10");
  EXPECT_EQ(find_dataset("fashion-mnist")->name, "fashion-mnist");
  ASSERT_NE(find_dataset("folder:/some/where"), nullptr);
  EXPECT_TRUE(find_dataset("folder:/some/where")->folder_in_name);
  EXPECT_EQ(find_dataset("folder:"), nullptr);  // no PATH
  EXPECT_EQ(find_dataset("cifar"), nullptr);
  EXPECT_EQ(find_dataset("mnist2"), nullptr);
  EXPECT_THROW(dataset_entry("imagenet"), Error);
  EXPECT_EQ(dataset_names(), "cifar10, mnist, fashion-mnist or folder:PATH");
}

TEST(DatasetCatalog, RootIsThePathThenDataDirThenTheDefault) {
  EXPECT_EQ(dataset_root("folder:/some/where", "ignored"), "/some/where");
  EXPECT_EQ(dataset_root("mnist", "/given"), "/given");
  EXPECT_EQ(dataset_root("mnist", ""), data::default_mnist_root());
  if (!std::filesystem::exists(data::user_data_dir("fashion-mnist"))) {
    EXPECT_EQ(dataset_root("fashion-mnist", ""), data::kFashionMnistDebianDir);
  }
}

TEST(DatasetCatalog, AgreesWithTheDownloaderOnWhatCanBeDownloaded) {
  for (const DatasetEntry& e : dataset_catalog()) {
    if (e.folder_in_name) {
      EXPECT_FALSE(e.downloadable());
      continue;
    }
    EXPECT_EQ(e.downloadable(), data::dataset_downloadable(std::string(e.name))) << e.name;
  }
  EXPECT_EQ(join_names(downloadable_dataset_names(), " and "), "cifar10 and mnist");
}

TEST(DatasetCatalog, HelpTextsListTheDefaultsByDataset) {
  EXPECT_EQ(defaults_by_dataset([](const DatasetEntry& e) { return std::string(e.default_model); }),
            "mnist_cnn for mnist and fashion-mnist, vgg6 otherwise");
}

TEST(FlagChoice, ParsesIntoTheEnum) {
  TrainConfig c;
  DdpConfig d;
  CLI::App app;
  add_train_flags(app, c);
  add_ddp_flags(app, d);
  app.parse(std::vector<std::string>{"gloo", "--backend", "bf16", "--grad-compression", "cosine",
                                     "--schedule", "crop-flip", "--augment", "mnist",
                                     "--dataset"});  // reversed order
  EXPECT_EQ(c.augment, Augment::CropFlip);
  EXPECT_EQ(c.schedule, optim::ScheduleKind::Cosine);
  EXPECT_EQ(d.backend, BackendChoice::Gloo);
  EXPECT_EQ(d.grad_compression, dist::GradCompression::Bf16);
}

TEST(FlagChoice, DefaultsStayWithoutTheFlag) {
  TrainConfig c;
  CLI::App app;
  add_train_flags(app, c);
  app.parse(std::vector<std::string>{"mnist", "--dataset"});
  EXPECT_EQ(c.augment, Augment::None);
  EXPECT_EQ(c.schedule, optim::ScheduleKind::Constant);
  EXPECT_EQ(c.precision, Precision::Tf32);  // PyTorch's default math
}

TEST(FlagChoice, PrecisionIsPyTorchsSwitches) {
  TrainConfig c;
  CLI::App app;
  add_train_flags(app, c);
  app.parse(std::vector<std::string>{"fp32", "--precision", "mnist", "--dataset"});
  EXPECT_EQ(c.precision, Precision::Fp32);
  EXPECT_FALSE(tf32_convolutions(c.precision));
  EXPECT_FALSE(autocast_bf16(c.precision));
  EXPECT_TRUE(tf32_convolutions(Precision::Tf32));
  EXPECT_FALSE(autocast_bf16(Precision::Tf32));
  app.parse(std::vector<std::string>{"bf16", "--precision", "mnist", "--dataset"});
  EXPECT_EQ(c.precision, Precision::Bf16);
  EXPECT_TRUE(autocast_bf16(c.precision));
  // bf16 values are exact in TF32: the convolutions may use its tensor cores without changing a result.
  EXPECT_TRUE(tf32_convolutions(c.precision));
  for (const char* bad : {"fp16", "BF16", "bfloat16"}) {
    try {
      app.parse(std::vector<std::string>{bad, "--precision", "mnist", "--dataset"});
      FAIL() << "--precision '" << bad << "' was accepted";
    } catch (const CLI::ValidationError& e) {
      EXPECT_EQ(std::string(e.what()),
                fmt::format("--precision: '{}' is not one of fp32, tf32 or bf16", bad));
    }
  }
}

TEST(FlagChoice, AnUnknownValueNamesTheFlagAndTheAcceptedValues) {
  TrainConfig c;
  CLI::App app;
  add_train_flags(app, c);
  try {
    app.parse(std::vector<std::string>{"flip", "--augment", "mnist", "--dataset"});
    FAIL() << "--augment flip was accepted";
  } catch (const CLI::ValidationError& e) {
    EXPECT_EQ(std::string(e.what()), "--augment: 'flip' is not one of none, crop-flip or flip-translate");
  }
  // A number is not a name, even though the enum is read through its underlying integer.
  EXPECT_THROW(app.parse(std::vector<std::string>{"1", "--augment", "mnist", "--dataset"}),
               CLI::ValidationError);
}

TEST(FlagChoice, BackendAutoResolvesByDevice) {
  EXPECT_EQ(resolve_backend(BackendChoice::Auto, true), dist::Backend::Nccl);
  EXPECT_EQ(resolve_backend(BackendChoice::Auto, false), dist::Backend::Gloo);
  EXPECT_EQ(resolve_backend(BackendChoice::Gloo, true), dist::Backend::Gloo);
  EXPECT_EQ(resolve_backend(BackendChoice::Nccl, false), dist::Backend::Nccl);  // refused later, by name
}

static_assert(std::is_base_of_v<Error, NonFiniteLoss>, "a NaN loss is one of the engine's errors");

}  // namespace
}  // namespace engine::apps
