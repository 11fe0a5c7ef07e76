#include "apps/train/cuda_graph_policy.h"

#include <fmt/format.h>

#include "core/error.h"

namespace engine::apps {

std::string cuda_graph_blocker(const CudaGraphFacts& f) {
  if (!f.cuda_device) return "the model trains on the CPU (CUDA graphs need a CUDA device)";
  if (!f.gpu_resident_data) {
    return "the staged loader (its batches arrive in a ring of buffers through a copy stream and worker "
           "threads; graphs need the GPU-resident dataset)";
  }
  if (f.gloo) return "the gloo process group (its all-reduces of CUDA tensors copy through the host)";
  if (f.sync_bn) return "--sync-bn (its statistics are combined on the host every forward and backward)";
  if (f.accumulate > 1) {
    return fmt::format(
        "--accumulate {} (a step of several micro-batches, each a different host path; "
        "graphs capture one batch per step)",
        f.accumulate);
  }
  if (f.ema_every > 0) {
    return fmt::format(
        "--ema-every {} (the weight average updates every K steps with a decay the host "
        "computes)",
        f.ema_every);
  }
  if (f.param_groups_change) {
    return "--param-group with epochs=N (the groups' settings change between epochs as kernel arguments)";
  }
  return "";
}

CudaGraphPlan plan_cuda_graph(CudaGraphMode mode, const CudaGraphFacts& facts) {
  if (mode == CudaGraphMode::Off) return {};
  const std::string blocker = cuda_graph_blocker(facts);
  if (blocker.empty()) return {.capture = true, .note = ""};
  ENGINE_CHECK(mode != CudaGraphMode::On, "--cuda-graph on: a training step cannot be a CUDA graph here: {}",
               blocker);
  // auto: the CPU needs no note (there are no graphs to miss); a CUDA device says why it runs eager.
  return {.capture = false,
          .note = facts.cuda_device ? "cnn_train: CUDA graph off (eager steps): " + blocker : std::string()};
}

}  // namespace engine::apps
