// A mistyped flag is answered with the nearest one the program knows (apps/cli/cli_errors.h; issue 28).
#include "apps/cli/cli_errors.h"

#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "apps/ddp_flags.h"
#include "apps/train/ddp.h"
#include "apps/train/train_config.h"
#include "apps/train_flags.h"
#include "core/error.h"
#include "core/library_error.h"

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

// Issue 44: every message ended with "[at data/idx.cpp:71]". A refused input reads as its message alone; a
// CUDA library's failure (the engine's or the device's fault) keeps the location, and --verbose shows it
// always.
TEST(CliErrors, AFailureReadsWithoutItsSourceLocationUnlessVerboseOrALibraryError) {
  const Error refused("MNIST: /x is not a folder", "data/idx.cpp", 71);
  EXPECT_EQ(std::string(refused.what()), "MNIST: /x is not a folder [at data/idx.cpp:71]");
  EXPECT_EQ(failure_text(refused), "MNIST: /x is not a folder");
  const Error bracketed("a [at b] c", "x.cpp", 3);  // text like the suffix inside the message stays
  EXPECT_EQ(failure_text(bracketed), "a [at b] c");
  const LibraryError library("CUDA error: out of memory in `cudaMalloc(&p, n)`", "core/allocator.cpp", 88);
  EXPECT_EQ(failure_text(library),
            "CUDA error: out of memory in `cudaMalloc(&p, n)` [at core/allocator.cpp:88]");
  EXPECT_EQ(failure_text(std::runtime_error("plain")), "plain");
  CLI::App app;
  add_verbose_flag(app);
  app.parse(std::vector<std::string>{"--verbose"});
  EXPECT_EQ(failure_text(refused), "MNIST: /x is not a folder [at data/idx.cpp:71]");
  CLI::App quiet;
  add_verbose_flag(quiet);
  quiet.parse(std::vector<std::string>{});  // the flag is process-wide: off again for a program without it
  EXPECT_EQ(failure_text(refused), "MNIST: /x is not a folder");
}

}  // namespace
}  // namespace engine::apps
