#pragma once
// train_bench's cases (benchmarks/train/train_bench.cpp says what it measures): the run's settings, one
// case's result, and the run of one model at one batch.

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "apps/train/layout_flag.h"
#include "apps/train/precision.h"
#include "benchmarks/train/step_timer.h"
#include "core/device.h"
#include "core/layout.h"
#include "data/dataset.h"
#include "kernels/cpu_fast/conv2d_algo.h"

namespace engine::bench::train {

inline constexpr std::int64_t kEpochImages = 50000;

struct Config {
  std::vector<std::string> models{"vgg6", "resnet18"};
  std::vector<std::int64_t> batches{128, 512};
  int warmup = 15;
  int steps = 100;
  bool epoch = false;
  apps::Precision precision = apps::Precision::Tf32;          // cnn_train's default
  apps::LayoutChoice layout_flag = apps::LayoutChoice::Auto;  // --layout: cnn_train's default
  Layout layout = Layout::NCHW;  // what it resolves to on the device the cases run on (train_bench.cpp)
  bool implicit_gemm_conv = false;
  cpu_fast::ConvAlgo cpu_conv_algo = cpu_fast::ConvAlgo::Direct;  // cnn_train's default
  bool deterministic = false;
  std::string json_path;
  bool smoke = false;
  bool cpu = false;
  bool no_fusion = false;   // Model::set_fusion(false): no BatchNorm+ReLU fusion, no conv-bias fold
  bool cuda_graph = false;  // time replays of one captured step
};

struct Result {
  std::string model;
  std::int64_t batch = 0;
  int steps = 0;
  double images_per_s = 0, epoch_s = 0, step_ms = 0;
  double peak_bytes = 0;
  std::array<double, bench::kPhases> phase_ms{};
  double model_tflop_s = 0;
  double final_loss = 0;
  bool epoch_measured = false;
  double host_ms = 0;               // median host time to queue one step
  double cpu_ms = 0;                // the process's CPU time per timed step (all threads; the mean)
  long long kernels_per_step = -1;  // -1: not counted (the CPU, or the capture failed: kernels_note says why)
  std::string kernels_note;
  bool cuda_graph = false;  // the timed steps were graph replays (phase_ms then holds only the whole step)
  double replay_ms = 0;     // --cuda-graph: median time of one replay (CUDA events)
};

// CIFAR-10's training split when CIFAR10_DIR (or ~/.cache/cnn_engine/cifar10) holds it, else random images;
// `source` says which.
data::Dataset cifar_or_random(std::string& source);

// One model at one batch on `device`. `stream` and `handles` are CUDA's (nullptr on the CPU).
Result run_case(const Config& c, const std::string& model_name, std::int64_t batch,
                const data::Dataset& dataset, Device device, void* stream, void* handles);

}  // namespace engine::bench::train
