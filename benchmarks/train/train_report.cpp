#include "benchmarks/train/train_report.h"

#include <cstdio>
#include <string>

#include "apps/train/layout_flag.h"
#include "apps/train/precision.h"
#include "kernels/cpu_fast/conv2d.h"
#include "kernels/cpu_fast/conv2d_algo.h"
#include "kernels/cpu_fast/host_probe.h"

namespace engine::bench::train {

void print_result(const Result& r, const Config& c) {
  std::printf(
      "%-9s batch %4lld  %9.0f images/s  epoch %7.2f s%s  step %8.3f ms  peak %7.0f MB  %6.2f TFLOP/s"
      "  loss %.3f\n",
      r.model.c_str(), static_cast<long long>(r.batch), r.images_per_s, r.epoch_s,
      r.epoch_measured ? "" : "*", r.step_ms, r.peak_bytes / 1e6, r.model_tflop_s, r.final_loss);
  std::printf(
      "          host %.3f ms/step (to queue it, median)  process CPU %.1f ms/step  kernels/step %s\n",
      r.host_ms, r.cpu_ms,
      r.kernels_per_step >= 0 ? std::to_string(r.kernels_per_step).c_str()
                              : ("n/a (" + r.kernels_note + ")").c_str());
  if (r.cuda_graph) {
    std::printf("          per step (median of %d, CUDA events): one graph replay %.3f ms\n", r.steps,
                r.replay_ms);
    std::fflush(stdout);
    return;
  }
  std::printf("          per step (median of %d, %s): ", r.steps,
              c.smoke || c.cpu ? "host clock" : "CUDA events");
  for (std::size_t p = 0; p < bench::kPhases; ++p)
    std::printf("%s %.3f ms%s", bench::phase_name(static_cast<bench::Phase>(p)), r.phase_ms[p],
                p + 1 < bench::kPhases ? ", " : "\n");
  std::fflush(stdout);  // a run cut short by a time limit keeps its finished cases in the log
}

nlohmann::json to_json(const Result& r, const Config& c, const std::string& device, const std::string& data) {
  nlohmann::json phases;
  for (std::size_t p = 0; p < bench::kPhases; ++p)
    phases[bench::phase_name(static_cast<bench::Phase>(p))] = r.phase_ms[p];
  if (r.cuda_graph) phases = {{"graph_replay", r.replay_ms}};
  const std::string conv =
      c.implicit_gemm_conv ? " implicit-gemm conv" : (c.deterministic ? " cudnn deterministic" : " cudnn");
  nlohmann::json out = {
      {"impl", "engine"},
      {"setting", c.cpu || c.smoke
                      ? std::string(!apps::autocast_bf16(c.precision) ? "cpu fp32"
                                    : cpu_fast::native_bf16()         ? "cpu bf16 (oneDNN bf16 convolutions)"
                                                                      : "cpu bf16 (emulated)") +
                            " conv " + cpu_fast::conv_algo_name(cpu_fast::conv_algo())
                      : std::string(apps::choice_name(apps::kPrecisionChoices, c.precision)) + conv},
      {"layout", apps::layout_flag_name(c.layout)},
      {"model", r.model},
      {"batch", r.batch},
      {"device", device},
      {"data", data},
      {"steps", r.steps},
      {"images_per_s", r.images_per_s},
      {"epoch_s", r.epoch_s},
      {"epoch_measured", r.epoch_measured},
      {"step_ms", r.step_ms},
      {"peak_mem_bytes", r.peak_bytes},
      {"breakdown_ms", phases},
      {"allreduce_note", "one process: no all-reduce"},
      {"model_tflop_s", r.model_tflop_s},
      {"final_loss", r.final_loss},
      {"host_ms_per_step", r.host_ms},
      {"cpu_ms_per_step", r.cpu_ms},
      {"kernels_per_step",
       r.kernels_per_step >= 0 ? nlohmann::json(r.kernels_per_step) : nlohmann::json(nullptr)},
      {"kernels_note", r.kernels_note},
      {"cuda_graph", r.cuda_graph}};
  if (c.cpu || c.smoke) {  // the host the CPU figures come from (kernels/cpu_fast/host_probe.h)
    const cpu_fast::HostProbe& h = cpu_fast::host_probe();
    out["isa"] = h.isa;
    out["peak_fp32_gflops"] = h.fp32_gflops;
    out["peak_fp32_gflops_one_thread"] = h.fp32_gflops_1;
    out["peak_bf16_gflops"] = h.bf16_gflops;
  }
  return out;
}

}  // namespace engine::bench::train
