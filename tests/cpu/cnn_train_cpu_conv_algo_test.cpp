// cnn_train --cpu-conv-algo (kernels/cpu_fast/conv2d_algo.h): winograd refused by name on a host whose oneDNN
// has none (ONEDNN_MAX_CPU_ISA=AVX2 makes this one such a host), auto training on the tiny data set and
// naming itself on the first line, and --deterministic keeping auto direct. The numerics of each algorithm
// are tests/cpu/cpu_fast_conv2d_winograd_test.cpp's.

#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/cpu_fast/conv2d_algo.h"
#include "tests/cpu/cnn_train_test_util.h"

namespace engine {
namespace {

namespace train = apps::testing;

std::vector<std::string> tiny_args(const std::string& root, const std::string& dir, const char* algo,
                                   bool deterministic) {
  std::vector<std::string> args = train::tiny_folder_args(root, dir, "cnn3", 8, 2);
  if (!deterministic) args.erase(std::find(args.begin(), args.end(), "--deterministic"));
  args.insert(args.end(), {"--cpu", "--cpu-conv-algo", algo});
  return args;
}

TEST(CnnTrainCpuConvAlgo, WinogradIsRefusedWhereOneDnnHasNone) {
  const std::string root = train::tiny_folder_dataset("conv_algo_refused");
  std::string command = "ONEDNN_MAX_CPU_ISA=AVX2 ";  // appended piecewise: gcc 12's -Wrestrict misfires on
  command += train::shell_quote(train::program_path("cnn_train"));  // "literal" + std::string
  for (const std::string& a : tiny_args(root, train::temp_dir("conv_algo_refused_out"), "winograd", false)) {
    command += ' ';
    command += train::shell_quote(a);
  }
  const train::RunResult r = train::run_command(command);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--cpu-conv-algo winograd: this host's oneDNN"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("ISA avx2"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("Epoch 1"), std::string::npos) << "refused before training:\n" << r.output;
}

TEST(CnnTrainCpuConvAlgo, AutoTrainsAndDeterministicKeepsDirect) {
  const std::string root = train::tiny_folder_dataset("conv_algo_auto");
  const train::RunResult r =
      train::run_train(tiny_args(root, train::temp_dir("conv_algo_auto_out"), "auto", false));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("3x3 conv auto"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("Test Acc: "), std::string::npos) << r.output;
  const train::RunResult d =
      train::run_train(tiny_args(root, train::temp_dir("conv_algo_det_out"), "auto", true));
  ASSERT_EQ(d.exit_code, 0) << d.output;
  EXPECT_NE(d.output.find("3x3 conv direct"), std::string::npos) << "--deterministic keeps direct:\n"
                                                                 << d.output;
}

TEST(CnnTrainCpuConvAlgo, AnUnknownAlgorithmIsRefusedByName) {
  const train::RunResult r = train::run_train({"--cpu", "--dataset", "mnist", "--cpu-conv-algo", "fft"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("fft"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace engine
