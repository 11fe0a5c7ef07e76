// cnn_train --layout nhwc end to end on the CPU (the tiny image folder): it trains to the losses of an
// NCHW run (the same kernels between exact transposes; see tests/cpu/nhwc_model_test.cpp), and its
// checkpoint evaluates in an NCHW run, since weights and Linear features keep PyTorch's order. The same with
// bf16 activations. --layout auto (the default) resolved by the host, saying what it chose and why, and a
// blocked run resuming bit for bit.

#include <algorithm>
#include <iterator>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "apps/train/layout_flag.h"
#include "kernels/cpu_fast/host_probe.h"
#include "tests/cpu/cnn_train_test_util.h"

namespace engine::apps {
namespace {

namespace train = apps::testing;

std::vector<double> train_losses(const std::string& metrics) {
  std::vector<double> out;
  const std::string key = "\"train_loss\":";
  for (std::size_t at = metrics.find(key); at != std::string::npos; at = metrics.find(key, at + 1)) {
    out.push_back(std::stod(metrics.substr(at + key.size())));
  }
  return out;
}

// precision: null for tiny_folder_args' own.
std::vector<double> run(const std::string& root, const std::string& dir, const char* layout,
                        const char* precision = nullptr) {
  std::vector<std::string> args = train::tiny_folder_args(root, dir, "cnn3", 8, 2);
  if (precision != nullptr) {
    const auto flag = std::find(args.begin(), args.end(), "--precision");
    EXPECT_NE(flag, args.end());
    if (flag != args.end()) *std::next(flag) = precision;
  }
  args.insert(args.end(), {"--cpu", "--layout", layout, "--metrics", dir + "/m.jsonl"});
  const train::RunResult r = train::run_train(args);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return train_losses(train::file_bytes(dir + "/m.jsonl"));
}

TEST(CnnTrainLayout, NhwcTrainsLikeNchwAndItsCheckpointEvaluatesInNchw) {
  const std::string root = train::tiny_folder_dataset("layout_train");
  const std::string nhwc_dir = train::temp_dir("layout_nhwc"), nchw_dir = train::temp_dir("layout_nchw");
  const std::vector<double> nhwc = run(root, nhwc_dir, "nhwc"), nchw = run(root, nchw_dir, "nchw");
  ASSERT_EQ(nhwc.size(), 2u);
  ASSERT_EQ(nchw.size(), 2u);
  // Float32 through two epochs: threaded reductions may order sums differently, and training amplifies
  // that without a useful bound; 1e-3 relative is a guard against a layout computing something else.
  for (std::size_t e = 0; e < 2; ++e) EXPECT_NEAR(nhwc[e], nchw[e], 1e-3 * nchw[e]) << "epoch " << e + 1;
  const train::RunResult eval =
      train::run_train({"--cpu", "--dataset", "folder:" + root, "--model", "cnn3", "--layout", "nchw",
                        "--eval-only", nhwc_dir + "/epoch2.safetensors"});
  EXPECT_EQ(eval.exit_code, 0) << eval.output;
  EXPECT_NE(eval.output.find("Test Acc: "), std::string::npos) << eval.output;
}

// --layout nchw16c and nchw8c (the CPU's blocked activations, core/layout.h): cnn3 trains like NCHW (the same
// oneDNN convolutions; BatchNorm's sums in another order: tests/cpu/blocked_model_test.cpp), with the same
// 1e-3 guard as NHWC above, and its checkpoint evaluates in NCHW.
TEST(CnnTrainLayout, BlockedTrainsLikeNchwAndItsCheckpointEvaluatesInNchw) {
  const std::string root = train::tiny_folder_dataset("layout_blocked_train");
  const std::vector<double> nchw = run(root, train::temp_dir("layout_blocked_nchw"), "nchw");
  ASSERT_EQ(nchw.size(), 2u);
  for (const char* layout : {"nchw16c", "nchw8c"}) {
    const std::string dir = train::temp_dir(std::string("layout_") + layout);
    const std::vector<double> blocked = run(root, dir, layout);
    ASSERT_EQ(blocked.size(), 2u) << layout;
    for (std::size_t e = 0; e < 2; ++e)
      EXPECT_NEAR(blocked[e], nchw[e], 1e-3 * nchw[e]) << layout << " epoch " << e + 1;
    const train::RunResult eval = train::run_train({"--cpu", "--dataset", "folder:" + root, "--model", "cnn3",
                                                    "--eval-only", dir + "/epoch2.safetensors"});
    EXPECT_EQ(eval.exit_code, 0) << eval.output;
    EXPECT_NE(eval.output.find("Test Acc: "), std::string::npos) << eval.output;
  }
}

// --precision bf16 --layout nhwc: bf16 activations in channels-last order train like bf16 in NCHW (the
// same guard as above), and the checkpoint (fp32, PyTorch's names and layouts) evaluates in an fp32 NCHW run.
TEST(CnnTrainLayout, Bf16InNhwcTrainsLikeBf16InNchw) {
  const std::string root = train::tiny_folder_dataset("layout_bf16");
  const std::string nhwc_dir = train::temp_dir("layout_bf16_nhwc"),
                    nchw_dir = train::temp_dir("layout_bf16_nchw");
  const std::vector<double> nhwc = run(root, nhwc_dir, "nhwc", "bf16"),
                            nchw = run(root, nchw_dir, "nchw", "bf16");
  ASSERT_EQ(nhwc.size(), 2u);
  ASSERT_EQ(nchw.size(), 2u);
  for (std::size_t e = 0; e < 2; ++e) EXPECT_NEAR(nhwc[e], nchw[e], 1e-3 * nchw[e]) << "epoch " << e + 1;
  const train::RunResult eval =
      train::run_train({"--cpu", "--dataset", "folder:" + root, "--model", "cnn3", "--layout", "nchw",
                        "--precision", "fp32", "--eval-only", nhwc_dir + "/epoch2.safetensors"});
  EXPECT_EQ(eval.exit_code, 0) << eval.output;
  EXPECT_NE(eval.output.find("Test Acc: "), std::string::npos) << eval.output;
}

// auto: nChw16c where oneDNN runs any AVX-512 core ISA, NCHW on AVX2 (nChw8c unmeasured there), older ISAs
// and GPUs; an explicit choice as given.
TEST(LayoutFlag, AutoResolvesByDeviceAndIsa) {
  for (const char* isa : {"avx512_core", "avx512_core_vnni", "avx512_core_bf16", "avx512_core_amx"}) {
    const ResolvedLayout r = resolve_layout(LayoutChoice::Auto, false, isa);
    EXPECT_EQ(r.layout, Layout::NCHW16c) << isa;
    EXPECT_EQ(r.why, std::string("auto: oneDNN runs ") + isa) << isa;
  }
  for (const char* isa : {"avx2", "avx2_vnni", "avx", "sse41", "avx512_mic"}) {
    const ResolvedLayout r = resolve_layout(LayoutChoice::Auto, false, isa);
    EXPECT_EQ(r.layout, Layout::NCHW) << isa;
    EXPECT_EQ(r.why, std::string("auto: oneDNN runs ") + isa + ", not AVX-512") << isa;
  }
  EXPECT_EQ(resolve_layout(LayoutChoice::Auto, true, "avx512_core_bf16").layout, Layout::NCHW);
  EXPECT_EQ(resolve_layout(LayoutChoice::Auto, true, "avx512_core_bf16").why, "auto: a GPU");
  EXPECT_EQ(resolve_layout(LayoutChoice::Nchw, false, "avx512_core").layout, Layout::NCHW);
  EXPECT_EQ(resolve_layout(LayoutChoice::Nchw8c, false, "avx512_core").layout, Layout::NCHW8c);
  EXPECT_EQ(resolve_layout(LayoutChoice::Nchw16c, false, "avx2").layout, Layout::NCHW16c);
  EXPECT_EQ(resolve_layout(LayoutChoice::Nhwc, true, "avx2").why, "--layout nhwc");
}

// cnn_train without --layout: its first line names the layout it took and why, on this host and on one made
// an AVX2 host (ONEDNN_MAX_CPU_ISA=AVX2).
TEST(CnnTrainLayout, AutoIsTheDefaultAndSaysWhatItChoseAndWhy) {
  const std::string root = train::tiny_folder_dataset("layout_auto");
  std::vector<std::string> args =
      train::tiny_folder_args(root, train::temp_dir("layout_auto_out"), "cnn3", 8, 1);
  args.emplace_back("--cpu");
  const train::RunResult here = train::run_train(args);
  ASSERT_EQ(here.exit_code, 0) << here.output;
  const std::string isa = cpu_fast::onednn_isa();
  const std::string expected = isa.starts_with("avx512_core")
                                   ? "layout nChw16c (auto: oneDNN runs " + isa + ")"
                                   : "layout NCHW (auto: oneDNN runs " + isa + ", not AVX-512)";
  EXPECT_NE(here.output.find(expected), std::string::npos) << expected << "\n" << here.output;

  std::string command = "ONEDNN_MAX_CPU_ISA=AVX2 ";  // appended piecewise (gcc 12's -Wrestrict)
  command += train::shell_quote(train::program_path("cnn_train"));
  args = train::tiny_folder_args(root, train::temp_dir("layout_auto_avx2"), "cnn3", 8, 1);
  args.emplace_back("--cpu");
  for (const std::string& a : args) {
    command += ' ';
    command += train::shell_quote(a);
  }
  const train::RunResult avx2 = train::run_command(command);
  ASSERT_EQ(avx2.exit_code, 0) << avx2.output;
  EXPECT_NE(avx2.output.find("layout NCHW (auto: oneDNN runs avx2, not AVX-512)"), std::string::npos)
      << avx2.output;
  args = train::tiny_folder_args(root, train::temp_dir("layout_auto_told"), "cnn3", 8, 1);
  const train::RunResult told = train::run_train(train::with_args(args, {"--cpu", "--layout", "nchw8c"}));
  ASSERT_EQ(told.exit_code, 0) << told.output;
  EXPECT_NE(told.output.find("layout nChw8c (--layout nchw8c)"), std::string::npos) << told.output;
}

// A blocked run's checkpoints hold PyTorch's tensors (weights [K, C, R, S]; the activations' layout is no
// state), so 1 epoch + --resume + 1 writes the file of 2 epochs straight, byte for byte.
TEST(CnnTrainLayout, BlockedResumeContinuesBitForBit) {
  const std::string root = train::tiny_folder_dataset("layout_blocked_resume");
  for (const char* layout : {"nchw16c", "nchw8c"}) {
    const auto args = [&](const std::string& dir, int epochs) {
      std::vector<std::string> a = train::tiny_folder_args(root, dir, "cnn3", 8, epochs);
      a.insert(a.end(), {"--cpu", "--layout", layout});
      return a;
    };
    const std::string tag = std::string("layout_resume_") + layout;
    const std::string straight = train::temp_dir(tag + "_straight"), first = train::temp_dir(tag + "_first"),
                      second = train::temp_dir(tag + "_second");
    ASSERT_EQ(train::run_train(args(straight, 2)).exit_code, 0) << layout;
    ASSERT_EQ(train::run_train(args(first, 1)).exit_code, 0) << layout;
    const train::RunResult r =
        train::run_train(train::with_args(args(second, 2), {"--resume", first + "/last.safetensors"}));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const std::string a = train::file_bytes(straight + "/epoch2.safetensors"),
                      b = train::file_bytes(second + "/epoch2.safetensors");
    ASSERT_FALSE(a.empty()) << layout;
    EXPECT_TRUE(a == b) << layout << ": 2 epochs straight and 1 + resume + 1 differ";
  }
}

}  // namespace
}  // namespace engine::apps
