// conv2d_weights_bench: a convolution's weight gradient (backward with dx null) at resnet18's CIFAR shapes,
// batch 64, through oneDNN's backward-weights (its bf16 kernel for bf16, its direct float32 one for float32)
// against the im2col GEMM (kernels/cpu_fast/conv2d_weights_gemm.h), in bf16 and float32, the two
// interleaved call by call (set_weights_gemm forces each way). Prints per row the median ms of each and the
// CPU seconds the process spent per call (which a competing process does not inflate the way it does the wall
// clock). Correctness is the tests'; this only times.
//
//   conv2d_weights_bench [--reps 15] [--rows A,B,...] [--layout nchw|nchw16c|nchw8c]
// --layout: x and dy in that layout (a blocked one: bf16 rows, and float32 ones with --pointwise).
// Threads: OMP_NUM_THREADS; they wait passively, as cnn_train's (kernels/cpu_fast/omp_wait.h).

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "benchmarks/kernels/conv_bench_common.h"
#include "kernels/cpu/cast.h"
#include "kernels/cpu_fast/conv2d.h"
#include "kernels/cpu_fast/conv2d_pointwise.h"
#include "kernels/cpu_fast/conv2d_weights_gemm.h"
#include "kernels/cpu_fast/host_probe.h"
#include "kernels/cpu_fast/omp_wait.h"

namespace {

using namespace engine;

constexpr auto conv = bench::conv::shape;
using bench::conv::cpu_seconds;
using bench::conv::filled;
using bench::conv::median;
using bench::conv::Row;

struct Timing {
  std::vector<double> wall, cpu;
};

// A pointwise layer's training step: forward (with a bias when db is wanted), then backward.
void pointwise_step(const Conv2dShape& g, const std::vector<float>& x, const std::vector<float>& w,
                    const std::vector<float>& dy, std::vector<float>& y, float* dx, std::vector<float>& dw,
                    float* db, cpu_fast::ConvLayouts layouts) {
  cpu_fast::conv2d_forward(g, x.data(), w.data(), db != nullptr ? w.data() : nullptr, y.data(), nullptr,
                           layouts);
  cpu_fast::conv2d_backward(g, x.data(), w.data(), dy.data(), dx, dw.data(), db, nullptr, layouts);
}

}  // namespace

int main(int argc, char** argv) {
  cpu_fast::prefer_passive_omp_wait(argv);  // as cnn_train and train_bench: their threads wait the same way
  CLI::App app{"conv2d_weights_bench"};
  int reps = 15;
  std::string only, layout_arg = "nchw";
  bool fp32_only = false, bias = false, with_dx = false, pointwise = false;
  app.add_option("--reps", reps, "timed calls of each (after one untimed)");
  app.add_option("--rows", only, "comma-separated row names (default all)");
  app.add_option("--layout", layout_arg,
                 "x and dy: nchw, or blocked (nchw16c, nchw8c; bf16 rows, or --pointwise)")
      ->check(CLI::IsMember({"nchw", "nchw16c", "nchw8c"}));
  app.add_flag("--fp32", fp32_only, "float32 only");
  app.add_flag("--bias", bias, "also db (float32)");
  app.add_flag("--dx", with_dx, "also dx (float32)");
  app.add_flag("--pointwise", pointwise,
               "float32 pointwise rows: forward and backward, oneDNN's against conv2d_pointwise.h's GEMMs");
  CLI11_PARSE(app, argc, argv);
  const Layout layout = layout_arg == "nchw16c"  ? Layout::NCHW16c
                        : layout_arg == "nchw8c" ? Layout::NCHW8c
                                                 : Layout::NCHW;
  const cpu_fast::ConvLayouts layouts{layout, layout};
  const std::vector<Row> rows = {
      {"s2_64_32", conv(64, 32, 128, 3, 2)},
      {"s2_128_16", conv(128, 16, 256, 3, 2)},
      {"s2_256_8", conv(256, 8, 512, 3, 2)},
      {"s1_512_4", conv(512, 4, 512, 3, 1)},
      {"s1_256_8", conv(256, 8, 256, 3, 1)},
      {"s1_128_16", conv(128, 16, 128, 3, 1)},
      {"s1_64_32", conv(64, 32, 64, 3, 1)},
      {"1x1_s2_64_32", conv(64, 32, 128, 1, 2)},
      {"1x1_s2_128_16", conv(128, 16, 256, 1, 2)},
      {"1x1_s2_256_8", conv(256, 8, 512, 1, 2)},
      // Issue 41's zoo at 32x32: squeezenet1_0's squeeze and expand1x1 layers, regnet_x_400mf's 1x1 layers,
      // densenet121's bottlenecks (1x1 to 128 channels).
      {"sq_96_16_6", conv(96, 6, 16, 1, 1)},
      {"sq_128_32_6", conv(128, 6, 32, 1, 1)},
      {"sq_16_64_6", conv(16, 6, 64, 1, 1)},
      {"sq_32_128_6", conv(32, 6, 128, 1, 1)},
      {"sq_256_48_3", conv(256, 3, 48, 1, 1)},
      {"sq_384_64_3", conv(384, 3, 64, 1, 1)},
      {"rx_64_64_4", conv(64, 4, 64, 1, 1)},
      {"rx_32_32_16", conv(32, 16, 32, 1, 1)},
      {"rx_32_64_8", conv(32, 8, 64, 1, 1)},
      {"rx_s2_32_32_16", conv(32, 16, 32, 1, 2)},
      {"rx_s2_32_64_8", conv(32, 8, 64, 1, 2)},
      {"dn_256_128_8", conv(256, 8, 128, 1, 1)},
      {"dn_96_128_8", conv(96, 8, 128, 1, 1)},
      {"dn_320_128_4", conv(320, 4, 128, 1, 1)},
      // convnext_tiny's ChannelLinear layers (its pointwise Linear pairs, 4x expansion) at each stage's map.
      {"cx_96_384_8", conv(96, 8, 384, 1, 1)},
      {"cx_384_96_8", conv(384, 8, 96, 1, 1)},
      {"cx_192_768_4", conv(192, 4, 768, 1, 1)},
      {"cx_768_192_4", conv(768, 4, 192, 1, 1)},
      {"cx_384_1536_2", conv(384, 2, 1536, 1, 1)},
      {"cx_1536_384_2", conv(1536, 2, 384, 1, 1)},
      // resnet50's bottleneck 1x1 layers at 32x32 (stages at 8x8 .. 1x1).
      {"r50_256_64_8", conv(256, 8, 64, 1, 1)},
      {"r50_512_128_4", conv(512, 4, 128, 1, 1)},
      {"r50_1024_256_2", conv(1024, 2, 256, 1, 1)},
  };
  std::printf("isa %s, batch 64\n", cpu_fast::onednn_isa());
  std::printf("%-14s %-5s %10s %10s %10s %10s  %s\n", "row", "type", "onednn_ms", "gemm_ms", "onednn_cpu",
              "gemm_cpu", "onednn impl");
  for (const Row& row : rows) {
    if (!only.empty() && ("," + only + ",").find("," + std::string(row.name) + ",") == std::string::npos)
      continue;
    const Conv2dShape& g = row.g;
    const std::vector<float> x = filled(g.x_size(), 0.3f), w = filled(g.w_size(), 0.1f),
                             dy = filled(g.y_size(), 0.2f);
    std::vector<bfloat16> xb(x.size()), wb(w.size()), dyb(dy.size());
    cpu::cast_f32_to_bf16(x.data(), xb.data(), static_cast<std::int64_t>(x.size()));
    cpu::cast_f32_to_bf16(w.data(), wb.data(), static_cast<std::int64_t>(w.size()));
    cpu::cast_f32_to_bf16(dy.data(), dyb.data(), static_cast<std::int64_t>(dy.size()));
    std::vector<float> y(g.y_size()), dw(g.w_size()), db(static_cast<std::size_t>(g.k)), dx(g.x_size());
    float* dbp = bias ? db.data() : nullptr;
    float* dxp = with_dx ? dx.data() : nullptr;
    for (const bool bf16 : {true, false}) {
      if ((bf16 && (fp32_only || !cpu_fast::native_bf16())) || (!bf16 && !pointwise && is_blocked(layout)))
        continue;
      Timing t[2];
      for (int i = 0; i <= reps; ++i) {
        for (int m = 0; m < 2; ++m) {
          const int mode = i % 2 == 0 ? m : 1 - m;  // alternate which runs first
          cpu_fast::set_weights_gemm(mode == 0 || pointwise ? cpu_fast::WeightsGemm::Never
                                                            : cpu_fast::WeightsGemm::Always);
          cpu_fast::set_pointwise_route(mode == 0 || !pointwise ? cpu_fast::PointwiseRoute::Never
                                                                : cpu_fast::PointwiseRoute::Always);
          const auto w0 = std::chrono::steady_clock::now();
          const double c0 = cpu_seconds();
          if (bf16)
            cpu_fast::conv2d_backward_bf16(g, xb.data(), wb.data(), dyb.data(), nullptr, dw.data(), nullptr,
                                           nullptr, layouts);
          else if (pointwise)
            pointwise_step(g, x, w, dy, y, dxp, dw, dbp, layouts);
          else
            cpu_fast::conv2d_backward(g, x.data(), w.data(), dy.data(), dxp, dw.data(), dbp);
          const double c1 = cpu_seconds();
          const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
          if (i > 0) {
            t[mode].wall.push_back(1e3 * wall);
            t[mode].cpu.push_back(1e3 * (c1 - c0));
          }
        }
      }
      cpu_fast::set_weights_gemm(cpu_fast::WeightsGemm::Never);  // oneDNN's, for its name below
      if (bf16)
        cpu_fast::conv2d_backward_bf16(g, xb.data(), wb.data(), dyb.data(), nullptr, dw.data(), nullptr,
                                       nullptr, layouts);
      else
        cpu_fast::conv2d_backward(g, x.data(), w.data(), dy.data(), nullptr, dw.data(), nullptr);
      std::printf("%-14s %-5s %10.2f %10.2f %10.2f %10.2f  %s\n", row.name, bf16 ? "bf16" : "fp32",
                  median(t[0].wall), median(t[1].wall), median(t[0].cpu), median(t[1].cpu),
                  cpu_fast::conv2d_impl(g, false, "bwd_weights", bf16, layouts).c_str());
    }
  }
  cpu_fast::set_weights_gemm(cpu_fast::WeightsGemm::Rule);
  cpu_fast::set_pointwise_route(cpu_fast::PointwiseRoute::Rule);
  return 0;
}
