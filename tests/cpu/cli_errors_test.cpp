// A mistyped flag is answered with the nearest one the program knows (apps/cli/cli_errors.h; issue 28).
#include "apps/cli/cli_errors.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "apps/ddp_flags.h"
#include "apps/train/ddp.h"
#include "apps/train/train_config.h"
#include "apps/train_flags.h"

namespace engine::apps {
namespace {

TEST(CliErrors, EditDistance) {
  EXPECT_EQ(edit_distance("", ""), 0u);
  EXPECT_EQ(edit_distance("--epoch", "--epochs"), 1u);
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(edit_distance("abc", ""), 3u);
  EXPECT_EQ(edit_distance("flaw", "lawn"), 2u);
}

TEST(CliErrors, TheNearestFlagOfCnnTrain) {
  TrainConfig config;
  DdpConfig ddp;
  CLI::App app;
  add_train_flags(app, config);
  add_ddp_flags(app, ddp);
  EXPECT_EQ(nearest_flag(app, "--epoch"), "--epochs");
  EXPECT_EQ(nearest_flag(app, "--epoch=3"), "--epochs");
  EXPECT_EQ(nearest_flag(app, "--batchsize"), "--batch-size");
  EXPECT_EQ(nearest_flag(app, "--weight_decay"), "--weight-decay");
  EXPECT_EQ(nearest_flag(app, "--dataset"), "--dataset");
  EXPECT_EQ(nearest_flag(app, "--checkpoint"), "--checkpoint-dir");  // a prefix of one flag
  EXPECT_EQ(nearest_flag(app, "--xyzzy-frobnicate"), "");            // nothing close: no guess
}

TEST(CliErrors, AnUnknownFlagIsStillAParseError) {
  TrainConfig config;
  CLI::App app;
  add_train_flags(app, config);
  try {
    app.parse(std::vector<std::string>{"1", "--epoch", "mnist", "--dataset"});
    FAIL() << "--epoch was accepted";
  } catch (const CLI::ParseError& e) {
    ::testing::internal::CaptureStderr();
    const int status = report_parse_error(app, e, "cnn_train");
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(status, 2);
    EXPECT_NE(err.find("cnn_train: unknown flag --epoch; did you mean --epochs?"), std::string::npos) << err;
  }
}

}  // namespace
}  // namespace engine::apps
