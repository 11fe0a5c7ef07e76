// kernel_bench: every CUDA kernel family of the engine, validated against the CPU reference, timed with CUDA
// events on a cold L2 at the shapes the zoo models run at (batch 128) and at one size that fills the GPU, and
// reported as GB/s or TFLOP/s against ceilings measured in the same run. See harness.h and gpu_harness.h.
//
//   kernel_bench                     every family on GPU 0, table at the end
//   kernel_bench --filter conv       only the families whose name contains "conv"
//   kernel_bench --json out.json     also the rows as JSON
//   kernel_bench --smoke             no GPU needed: the CPU validation path on tiny sizes and the bookkeeping
//                                    (byte/FLOP counts, table); GPU timing is skipped (ctest label cpu)

#include <cstdio>
#include <exception>
#include <memory>

#include <CLI/CLI.hpp>

#include "benchmarks/kernels/families.h"
#include "benchmarks/kernels/harness.h"
#include "core/device.h"

#if ENGINE_HAVE_CUDA
#include "benchmarks/kernels/gpu_harness.h"
#endif

int main(int argc, char** argv) {
  using namespace engine::bench;
  CLI::App app{
      "Kernel microbenchmarks: validated against the CPU, timed on a cold L2, against measured ceilings"};
  Options o;
  bool no_fill = false;
  app.add_flag("--smoke", o.smoke, "CPU only: validation on tiny sizes and the bookkeeping; no GPU timing");
  app.add_option("--filter", o.filter, "run only the families whose name contains this");
  app.add_option("--warmup", o.warmup, "untimed runs before timing")->check(CLI::NonNegativeNumber);
  app.add_option("--repeats", o.repeats, "timed runs per row (the median is reported)")
      ->check(CLI::PositiveNumber);
  app.add_flag("--no-fill", no_fill, "skip the sizes that fill the GPU");
  app.add_option("--json", o.json_path, "also write the rows to this JSON file");
  CLI11_PARSE(app, argc, argv);
  o.fill_size = !no_fill;

  try {
    Report report(o);
    GpuBench* gpu = nullptr;  // stays nullptr in smoke mode
#if ENGINE_HAVE_CUDA
    std::unique_ptr<GpuBench> owned;
#endif
    if (o.smoke) {
      std::printf(
          "kernel_bench --smoke: CPU reference in float vs in double on tiny sizes; GPU timing skipped\n");
    } else {
#if ENGINE_HAVE_CUDA
      owned = std::make_unique<GpuBench>(report);
      gpu = owned.get();
      gpu->measure_ceilings();
#else
      std::fprintf(stderr, "kernel_bench: this is a CPU-only build; only --smoke runs here\n");
      return 2;
#endif
    }
    for (const Family& f : families()) {
      if (!report.wants(f.name)) continue;
      std::printf("== %s\n", f.name);
      f.run(report, gpu);
    }
    report.print_table(stdout);
    if (o.smoke)
      std::printf("GPU timing skipped (--smoke): the table holds the bookkeeping and CPU checks only\n");
    if (!o.json_path.empty()) report.write_json(o.json_path);
    if (report.failures() > 0) {
      std::fprintf(stderr, "kernel_bench: %d row(s) failed validation against the CPU reference\n",
                   report.failures());
      return 1;
    }
    if (report.rows().empty()) {
      std::fprintf(stderr, "kernel_bench: no family matches --filter '%s'\n", o.filter.c_str());
      return 1;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kernel_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
