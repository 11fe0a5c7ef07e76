#pragma once
// Helpers for the tests that run the programs (cnn_train, cnn_predict) as a user would: the binary's path
// (beside this test binary's folder: <build>/apps/), a command runner that captures stdout+stderr and the
// exit code, a tiny image-folder dataset written by the test so no downloaded data is needed, and the small
// helpers the program tests share (argument lists, counting in output, reading files, comparing checkpoints).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <span>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <utility>
#include <vector>

#include "data/image_codec.h"
#include "optim/safetensors.h"
#include "tests/common/scratch_dirs.h"

namespace engine::apps::testing {

// <build>/apps/<name>, found from this process's own path (<build>/tests/cpu_tests).
inline std::string program_path(const std::string& name) {
  const auto self = std::filesystem::read_symlink("/proc/self/exe");
  return (self.parent_path().parent_path() / "apps" / name).string();
}

struct RunResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr, interleaved
};

inline std::string shell_quote(const std::string& s) {
  std::string out;
  out.push_back('\'');
  for (const char c : s) {
    if (c == '\'') {
      out.append("'\\''");
    } else {
      out.push_back(c);
    }
  }
  out.push_back('\'');
  return out;
}

// Runs a shell command line (its words already quoted), stdout and stderr interleaved. The CPU kernels
// (oneDNN, OpenMP) run one thread in these runs (unless OMP_NUM_THREADS is set): ctest runs tests in parallel
// on CI's 2 cores, and oversubscribed OpenMP threads spin instead of working.
inline RunResult run_command(std::string command) {
  ::setenv("OMP_NUM_THREADS", "1", /*overwrite=*/0);
  command.append(" 2>&1");
  RunResult r;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return r;
  char buffer[4096];
  for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) r.output.append(buffer, n);
  const int status = ::pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

// <build>/apps/<name> ARGS.
inline RunResult run_program(const std::string& name, const std::vector<std::string>& args) {
  std::string command = shell_quote(program_path(name));
  for (const std::string& a : args) {
    command.push_back(' ');
    command.append(shell_quote(a));
  }
  return run_command(std::move(command));
}

inline RunResult run_train(const std::vector<std::string>& args) { return run_program("cnn_train", args); }

// root/{train,test}/{class_a,class_b,class_c}/N.png: 8x8 RGB images whose colour says the class (a learnable
// toy), `per_class` training and 4 test images per class.
inline std::string tiny_folder_dataset(const std::string& name, int per_class = 16) {
  const auto root = engine::testing::scratch_path("cnn_engine_", name);
  const char* classes[] = {"class_a", "class_b", "class_c"};
  for (const char* split : {"train", "test"}) {
    const int count = std::string(split) == "train" ? per_class : 4;
    for (int c = 0; c < 3; ++c) {
      const auto dir = root / split / classes[c];
      std::filesystem::create_directories(dir);
      for (int i = 0; i < count; ++i) {
        data::Image image{3, 8, 8, std::vector<std::uint8_t>(3 * 64)};
        for (int p = 0; p < 3 * 64; ++p) {
          const int channel = p / 64;
          image.pixels[static_cast<std::size_t>(p)] =
              static_cast<std::uint8_t>((channel == c ? 180 : 40) + (p * 7 + i * 13) % 50);
        }
        data::write_png((dir / (std::to_string(i) + ".png")).string(), image);
      }
    }
  }
  return root.string();
}

// `args` followed by `more`.
inline std::vector<std::string> with_args(std::vector<std::string> args,
                                          const std::vector<std::string>& more) {
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

// A short deterministic run of `model` on tiny_folder_dataset(root): lr 0.05, seed 3, checkpoints in
// `ckpt_dir`; the device is the caller's to add (--cpu, --gpus ...). --precision fp32: the GPU tests compare
// CUDA runs with CPU runs at fp32's tolerances, which TF32 convolutions (~1e-3 relative) would exceed.
inline std::vector<std::string> tiny_folder_args(const std::string& root, const std::string& ckpt_dir,
                                                 const std::string& model, int batch, int epochs) {
  return {"--dataset",
          "folder:" + root,
          "--model",
          model,
          "--batch-size",
          std::to_string(batch),
          "--epochs",
          std::to_string(epochs),
          "--lr",
          "0.05",
          "--deterministic",
          "--seed",
          "3",
          "--checkpoint-dir",
          ckpt_dir,
          "--precision",
          "fp32"};
}

// How many times `what` occurs in `text` (not overlapping).
inline std::size_t count_of(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = 0; (at = text.find(what, at)) != std::string::npos; at += what.size()) ++n;
  return n;
}

// The whole file, or "" when it cannot be read.
inline std::string file_bytes(const std::string& path) {
  std::string out;
  if (FILE* f = std::fopen(path.c_str(), "rb")) {
    char buffer[65536];
    for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, f)) > 0;) out.append(buffer, n);
    std::fclose(f);
  }
  return out;
}

// One tensor of two checkpoints compared: the largest |a - b| and the largest |a| (F32 and I64 entries).
// `worst_index` is the element of the largest difference and `runner_up` the largest difference at any
// other element: a single ReLU whose input lies within rounding of 0 and flips between two runs changes
// one channel's BatchNorm gradients alone, so its difference stands out from the runner-up by orders of
// magnitude, where rounding spreads over many elements alike.
struct TensorDifference {
  std::string name;
  double worst = 0.0, scale = 0.0;
  std::size_t worst_index = 0;
  double runner_up = 0.0;
};

inline std::vector<double> entry_values(const optim::SafetensorsFile& file,
                                        const optim::SafetensorsFile::Entry& e) {
  const std::span<const std::uint8_t> bytes = file.bytes(e);
  std::vector<double> out;
  if (e.dtype == "F32") {
    std::vector<float> f(bytes.size() / sizeof(float));
    std::memcpy(f.data(), bytes.data(), f.size() * sizeof(float));
    out.assign(f.begin(), f.end());
  } else if (e.dtype == "I64") {
    std::vector<std::int64_t> v(bytes.size() / sizeof(std::int64_t));
    std::memcpy(v.data(), bytes.data(), v.size() * sizeof(std::int64_t));
    for (const std::int64_t x : v) out.push_back(static_cast<double>(x));
  }
  return out;
}

// Every tensor of checkpoint `a` against the same-named one of `b`; a tensor missing from `b` or of another
// size is reported with worst = infinity.
inline std::vector<TensorDifference> checkpoint_differences(const std::string& a_path,
                                                            const std::string& b_path) {
  const optim::SafetensorsFile a = optim::SafetensorsFile::read(a_path);
  const optim::SafetensorsFile b = optim::SafetensorsFile::read(b_path);
  std::vector<TensorDifference> out;
  for (const auto& [name, ea] : a.entries()) {
    TensorDifference d{name};
    const optim::SafetensorsFile::Entry* eb = b.find(name);
    const std::vector<double> x = entry_values(a, ea);
    const std::vector<double> y = eb != nullptr ? entry_values(b, *eb) : std::vector<double>{};
    if (x.size() != y.size()) {
      d.worst = std::numeric_limits<double>::infinity();
    } else {
      for (std::size_t i = 0; i < x.size(); ++i) {
        d.scale = std::max(d.scale, std::abs(x[i]));
        const double diff = std::abs(x[i] - y[i]);
        if (diff > d.worst) {
          d.runner_up = d.worst;
          d.worst = diff;
          d.worst_index = i;
        } else {
          d.runner_up = std::max(d.runner_up, diff);
        }
      }
    }
    out.push_back(d);
  }
  return out;
}

// The failure text of a checkpoint comparison: the difference, where it is and the runner-up.
inline std::string describe(const TensorDifference& d) {
  char text[256];
  std::snprintf(text, sizeof text,
                ": largest difference %.6g of values up to %.6g (element %zu; largest difference elsewhere "
                "%.6g)",
                d.worst, d.scale, d.worst_index, d.runner_up);
  return d.name + text;
}

// The lines of a run's output that hold `what` (e.g. the "conv plan" lines cnn_train prints at exit under
// ENGINE_PRINT_CONV_PLANS=1), for a failure message.
inline std::string lines_with(const std::string& text, const std::string& what) {
  std::string out;
  for (std::size_t at = 0; at < text.size();) {
    std::size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    if (text.find(what, at) < end) out.append(text, at, end - at + 1);
    at = end + 1;
  }
  return out;
}

inline std::string temp_dir(const std::string& name) {
  return engine::testing::scratch_dir("cnn_engine_", name).string();
}

}  // namespace engine::apps::testing
