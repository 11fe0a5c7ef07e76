// Checkpoints load in PyTorch whatever the precision and layout (issue 17): cnn_train trains cnn3 briefly on
// the CPU under each --precision and --layout, on a small CIFAR-10-format set this test writes, and
// scripts/pytorch-check.py --cpu (which holds the tolerances' reasoning) loads the file strictly into
// PyTorch's cnn3, checks every dtype is PyTorch's (fp32), and compares PyTorch's fp32 test accuracy and loss
// with `cnn_train --eval-only` in the run's layout on the same file, then the other way (a PyTorch-stepped
// state dict evaluated by cnn_train). Both reading the file alike is not enough (a writer that misorders a
// weight fools both), so PyTorch's loss must also be the run's own end-of-epoch test loss. Skipped, saying
// how to enable it, where python3 cannot import torch (CI: torch is no dependency; ENGINE_TORCHRUN picks a
// venv).

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/common/environment.h"
#include "tests/common/pytorch_tools.h"
#include "tests/cpu/cnn_train_test_util.h"

namespace engine::apps {
namespace {

namespace train = apps::testing;

// CIFAR-10 binary records ([label][3x32x32 CHW bytes]): uniform noise, plus brighter stripes 2 pixels wide
// that say the class by their channel (3), orientation (2) and half of the image (2). Oriented, so a kernel
// read transposed (r <-> s) sees another class; faint enough that one epoch of cnn3 reaches a test loss well
// between 0 and ln 10 (printed), where a misread weight shows, not a set every model gets right (loss ~0,
// which 4 printed decimals cannot compare).
std::vector<char> cifar_batch(int count, std::uint32_t seed) {
  constexpr int kSignal = 80;
  std::mt19937 gen(seed);
  std::vector<char> out;
  for (int i = 0; i < count; ++i) {
    const int label = static_cast<int>(gen() % 10);
    const int channel = label % 3, vertical = (label / 3) % 2, half = label / 6;
    out.push_back(static_cast<char>(label));
    for (int c = 0; c < 3; ++c) {
      for (int y = 0; y < 32; ++y) {
        for (int x = 0; x < 32; ++x) {
          const bool lit = c == channel && y / 16 == half && ((vertical != 0 ? x : y) / 2) % 2 == 0;
          out.push_back(static_cast<char>(gen() % (256 - kSignal) + (lit ? kSignal : 0)));
        }
      }
    }
  }
  return out;
}

// <scratch>/cifar-10-batches-bin: five training batches of 64 images (one epoch at batch 32: 10 steps) and a
// test batch of 200, written once per test process.
const std::string& cifar_format_dataset() {
  static const std::string root = [] {
    std::string dir = train::temp_dir("pytorch_checkpoint_data");  // not const: moved out
    const std::filesystem::path batches = std::filesystem::path(dir) / "cifar-10-batches-bin";
    std::filesystem::create_directories(batches);
    const auto write = [&](const std::string& name, const std::vector<char>& bytes) {
      std::ofstream(batches / name, std::ios::binary)
          .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    };
    for (std::uint32_t k = 1; k <= 5; ++k)
      write("data_batch_" + std::to_string(k) + ".bin", cifar_batch(64, k));
    write("test_batch.bin", cifar_batch(200, 99));
    return dir;
  }();
  return root;
}

struct Case {
  const char* precision;
  const char* layout;
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.precision << " " << c.layout; }

// The number after `keys`, each found after the one before it in `text`, or NaN when one is absent.
double number_after(const std::string& text, const std::vector<std::string>& keys) {
  std::size_t at = 0;
  for (const std::string& key : keys) {
    at = text.find(key, at);
    if (at == std::string::npos) return std::nan("");
    at += key.size();
  }
  return std::strtod(text.c_str() + at, nullptr);
}

// How far the run's own test loss (its precision and layout) may be from PyTorch's fp32 loss on the file.
// fp32, tf32 (the CPU computes fp32 under tf32): pytorch-check.py's 1e-3 relative plus half the 4th printed
// decimal. bf16: each of cnn3's 5 conv/linear layers rounds its inputs, weights and outputs to bf16 (2^-8
// relative each); 15 independent roundings grow as a random walk, about sqrt(15) 2^-8 = 1.5% of a logit, and
// the mean loss over 200 images moves by less: 2% relative (measured: 3e-4). A misread weight moves it by
// tens of percent.
double live_loss_tolerance(const std::string& precision, double loss) {
  return (precision == "bf16" ? 2e-2 : 1e-3) * loss + 5e-5;
}

class CnnTrainPyTorchCheckpoint : public ::testing::TestWithParam<Case> {};

TEST_P(CnnTrainPyTorchCheckpoint, LoadsStrictlyAndEvaluatesInPyTorchAsInCnnTrain) {
  // scripts/pytorch-check.py's imports (torchvision through benchmarks/pytorch/train_peer.py's import_torch).
  SKIP_WITHOUT_PYTHON_MODULES("torch", "torchvision", "safetensors.torch");
  const engine::testing::PyTorchTools& torch = engine::testing::pytorch_tools();
  const Case c = GetParam();
  const std::string& data = cifar_format_dataset();
  const std::string dir = train::temp_dir(std::string("pytorch_checkpoint_") + c.precision + "_" + c.layout);
  const train::RunResult run =
      train::run_train({"--cpu",  "--dataset",        "cifar10", "--data-dir",   data,        "--model",
                        "cnn3",   "--epochs",         "1",       "--batch-size", "32",        "--lr",
                        "0.02",   "--seed",           "3",       "--precision",  c.precision, "--layout",
                        c.layout, "--checkpoint-dir", dir});
  ASSERT_EQ(run.exit_code, 0) << run.output;
  std::printf("%s\n", run.output.c_str());

  const std::string script = (engine::testing::repo_root() / "scripts" / "pytorch-check.py").string();
  const train::RunResult check = train::run_command(
      train::shell_quote(torch.python) + " " + train::shell_quote(script) +
      " --cpu --model cnn3 --cnn-train " + train::shell_quote(train::program_path("cnn_train")) +
      " --checkpoint " + train::shell_quote(dir + "/last.safetensors") + " --data-dir " +
      train::shell_quote(data) + " --layout " + c.layout);
  std::printf("%s\n", check.output.c_str());
  EXPECT_EQ(check.exit_code, 0) << check.output;
  EXPECT_NE(check.output.find("pytorch-check: OK"), std::string::npos) << check.output;

  // The file is the trained model, not only a file both programs read alike: PyTorch's loss on it is the
  // loss the run itself reported at the end of its epoch.
  const double live = number_after(run.output, {"Epoch 1 |", "Test Loss: "});
  const double pytorch = number_after(check.output, {"1. cnn_train checkpoint:", ", PyTorch ", "% loss "});
  EXPECT_NEAR(pytorch, live, live_loss_tolerance(c.precision, live)) << run.output << check.output;
}

INSTANTIATE_TEST_SUITE_P(PrecisionsAndLayouts, CnnTrainPyTorchCheckpoint,
                         ::testing::Values(Case{"fp32", "nchw"}, Case{"fp32", "nhwc"}, Case{"tf32", "nchw"},
                                           Case{"tf32", "nhwc"}, Case{"bf16", "nchw"}, Case{"bf16", "nhwc"}),
                         [](const ::testing::TestParamInfo<Case>& test) {
                           return std::string(test.param.precision) + "_" + test.param.layout;
                         });

}  // namespace
}  // namespace engine::apps
