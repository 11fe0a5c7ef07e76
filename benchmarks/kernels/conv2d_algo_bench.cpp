// conv2d_algo_bench: the 3x3 stride-1 convolutions of vgg6 and resnet18 at CIFAR's sizes, batch 64, each
// direction under --cpu-conv-algo direct against winograd (kernels/cpu_fast/conv2d_algo.h), the two
// interleaved call by call: what `auto` chooses between on a step's first call, timed apart from the step. In
// bf16 (default) the Winograd side is the float32 one on the widened operands, its conversions included.
// Prints per row and direction the median CPU ms of each (the process's CPU time: with passively waiting
// threads the work, which a competing process inflates far less than the wall clock), the wall-clock
// minimum of each, and what ran. backward-weights runs with dx null; "both" is the whole backward (dx and
// dw), which reads dy once for both where their layouts agree. Correctness is the tests'; this only times.
//
//   conv2d_algo_bench [--reps 9] [--rows A,B,...] [--fp32] [--layout nchw16c|nchw8c|nchw]
// Threads: OMP_NUM_THREADS; they wait passively, as cnn_train's (kernels/cpu_fast/omp_wait.h).

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "benchmarks/kernels/conv_bench_common.h"
#include "kernels/cpu/cast.h"
#include "kernels/cpu_fast/conv2d.h"
#include "kernels/cpu_fast/conv2d_algo.h"
#include "kernels/cpu_fast/host_probe.h"
#include "kernels/cpu_fast/omp_wait.h"

namespace {

using namespace engine;
using bench::conv::cpu_seconds;
using bench::conv::median;
using bench::conv::Row;

// One layer's operands in one type: the direction `dir` (0 forward, 1 backward-weights, 2 both backwards).
template <typename T>
struct Operands {
  std::vector<T> x, w, dy, y, dx;
  std::vector<float> bias, dw, db;
  void run(const Conv2dShape& g, int dir, cpu_fast::ConvLayouts l) {
    T* dxp = dir == 2 ? dx.data() : nullptr;
    if constexpr (std::is_same_v<T, bfloat16>) {
      if (dir == 0)
        cpu_fast::conv2d_forward_bf16(g, x.data(), w.data(), bias.data(), y.data(), nullptr, l);
      else
        cpu_fast::conv2d_backward_bf16(g, x.data(), w.data(), dy.data(), dxp, dw.data(), db.data(), nullptr,
                                       l);
    } else {
      if (dir == 0)
        cpu_fast::conv2d_forward(g, x.data(), w.data(), bias.data(), y.data(), nullptr, l);
      else
        cpu_fast::conv2d_backward(g, x.data(), w.data(), dy.data(), dxp, dw.data(), db.data(), nullptr, l);
    }
  }
};

template <typename T>
std::vector<T> typed(const std::vector<float>& v) {
  std::vector<T> out(v.size());
  if constexpr (std::is_same_v<T, bfloat16>) {
    cpu::cast_f32_to_bf16(v.data(), out.data(), static_cast<std::int64_t>(v.size()));
  } else {
    out = v;
  }
  return out;
}

template <typename T>
void bench_row(const Row& row, int reps, cpu_fast::ConvLayouts layouts) {
  const Conv2dShape& g = row.g;
  Operands<T> o{typed<T>(bench::conv::filled(g.x_size(), 0.3f)),
                typed<T>(bench::conv::filled(g.w_size(), 0.1f)),
                typed<T>(bench::conv::filled(g.y_size(), 0.2f)),
                std::vector<T>(g.y_size()),
                std::vector<T>(g.x_size()),
                bench::conv::filled(static_cast<std::size_t>(g.k), 0.5f),
                std::vector<float>(g.w_size()),
                std::vector<float>(static_cast<std::size_t>(g.k))};
  constexpr cpu_fast::ConvAlgo kAlgos[2] = {cpu_fast::ConvAlgo::Direct, cpu_fast::ConvAlgo::Winograd};
  constexpr const char* kDirs[3] = {"fwd", "bwd_weights", "both"};
  constexpr bool kBf16 = std::is_same_v<T, bfloat16>;
  for (int dir = 0; dir < 3; ++dir) {
    std::vector<double> wall[2], cpu[2];
    for (int i = 0; i <= reps; ++i)
      for (int m = 0; m < 2; ++m) {
        const int a = i % 2 == 0 ? m : 1 - m;  // alternate which runs first
        cpu_fast::set_conv_algo(kAlgos[a]);
        const auto w0 = std::chrono::steady_clock::now();
        const double c0 = cpu_seconds();
        o.run(g, dir, layouts);
        const double c1 = cpu_seconds();
        if (i == 0) continue;  // the first call builds the primitives and touches the buffers
        wall[a].push_back(1e3 * std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count());
        cpu[a].push_back(1e3 * (c1 - c0));
      }
    std::string ran[2];
    for (int a = 0; a < 2; ++a) {
      cpu_fast::set_conv_algo(kAlgos[a]);
      ran[a] = cpu_fast::conv2d_impl(g, true, dir == 0 ? "fwd" : "bwd_weights", kBf16, layouts);
      if (dir == 2) ran[a] += " + " + cpu_fast::conv2d_impl(g, true, "bwd_data", kBf16, layouts);
    }
    std::printf("%-12s %-5s %-12s %9.2f %9.2f %6.2fx %9.2f %9.2f  %s | %s\n", row.name,
                kBf16 ? "bf16" : "fp32", kDirs[dir], median(cpu[0]), median(cpu[1]),
                median(cpu[0]) / median(cpu[1]), *std::min_element(wall[0].begin(), wall[0].end()),
                *std::min_element(wall[1].begin(), wall[1].end()), ran[0].c_str(), ran[1].c_str());
    std::fflush(stdout);
  }
}

}  // namespace

int main(int argc, char** argv) {
  cpu_fast::prefer_passive_omp_wait(argv);
  CLI::App app{"conv2d_algo_bench"};
  int reps = 9;
  std::string only, layout_arg = "nchw16c";
  bool fp32 = false;
  app.add_option("--reps", reps, "timed calls of each (after one untimed)");
  app.add_option("--rows", only, "comma-separated row names (default all)");
  app.add_option("--layout", layout_arg, "the activations' layout")
      ->check(CLI::IsMember({"nchw", "nchw16c", "nchw8c"}));
  app.add_flag("--fp32", fp32, "float32 operands (default bf16: the host must run bf16 natively)");
  CLI11_PARSE(app, argc, argv);
  if (!cpu_fast::winograd_available()) {
    std::fprintf(stderr, "conv2d_algo_bench: this host's oneDNN (ISA %s) has no Winograd convolution\n",
                 cpu_fast::onednn_isa());
    return 2;
  }
  if (!fp32 && !cpu_fast::native_bf16()) {
    std::fprintf(stderr, "conv2d_algo_bench: this host does not run bf16 natively (ISA %s): use --fp32\n",
                 cpu_fast::onednn_isa());
    return 2;
  }
  const Layout layout = layout_arg == "nchw16c"  ? Layout::NCHW16c
                        : layout_arg == "nchw8c" ? Layout::NCHW8c
                                                 : Layout::NCHW;
  const auto conv = bench::conv::shape;
  const std::vector<Row> rows = {
      {"64_64_32", conv(64, 32, 64, 3, 1)},     {"64_128_16", conv(64, 16, 128, 3, 1)},
      {"128_128_16", conv(128, 16, 128, 3, 1)}, {"128_256_8", conv(128, 8, 256, 3, 1)},
      {"256_256_8", conv(256, 8, 256, 3, 1)},   {"512_512_4", conv(512, 4, 512, 3, 1)},
  };
  std::printf(
      "isa %s, batch 64, layout %s; CPU ms (median) direct, winograd, direct/winograd; wall ms (min)\n",
      cpu_fast::onednn_isa(), layout_arg.c_str());
  for (const Row& row : rows) {
    if (!only.empty() && ("," + only + ",").find("," + std::string(row.name) + ",") == std::string::npos)
      continue;
    if (fp32)
      bench_row<float>(row, reps, {layout, layout});
    else
      bench_row<bfloat16>(row, reps, {layout, layout});
  }
  cpu_fast::set_conv_algo(cpu_fast::ConvAlgo::Direct);
  return 0;
}
