#pragma once
// Whether cnn_train replays its training step as one CUDA graph (--cuda-graph, issue 17 item 4), and the one
// list of what keeps a step eager (cuda_graph_blocker). A graph replays the kernels, copies and NCCL calls it
// captured with the arguments they had then, and runs no host code: so a step qualifies only when everything
// that changes per step is read from the device step state (apps/train/step_state.h) and nothing in it waits
// for or computes on the host.
//
//   auto  (default) graphs where possible; otherwise eager, with one log line saying why
//   on    graphs, and an error naming the reason where they are impossible
//   off   eager steps (debugging, comparisons)

#include <array>
#include <cstdint>
#include <string>

#include "apps/train/flag_choice.h"

namespace engine::apps {

enum class CudaGraphMode { Auto, On, Off };
inline constexpr std::array<FlagChoice<CudaGraphMode>, 3> kCudaGraphChoices = {{
    {"auto", CudaGraphMode::Auto},
    {"on", CudaGraphMode::On},
    {"off", CudaGraphMode::Off},
}};

// What the decision depends on, as the Trainer knows it at setup (the same on every rank: capture is a
// collective property of the NCCL calls inside, so all ranks must decide alike).
struct CudaGraphFacts {
  bool cuda_device = false;          // the model trains on a CUDA device
  bool gpu_resident_data = true;     // the training loader keeps the dataset on the GPU (TrainConfig)
  bool gloo = false;                 // data parallelism over a gloo process group
  bool sync_bn = false;              // --sync-bn with more than one rank
  std::int64_t accumulate = 1;       // --accumulate
  std::int64_t ema_every = 0;        // --ema-every
  bool param_groups_change = false;  // a --param-group rule with epochs=N
};

// "" when a training step can be captured and replayed; else the first reason it cannot, one line naming the
// flag or the condition.
std::string cuda_graph_blocker(const CudaGraphFacts& facts);

struct CudaGraphPlan {
  bool capture = false;  // train with a captured step
  std::string note;      // auto without graphs on a CUDA device: the log line saying why (else "")
};

// --cuda-graph against the facts. Throws engine::Error naming the reason for `on` where graphs are
// impossible; `auto` falls back to eager steps with the note; `off` is eager without a note.
CudaGraphPlan plan_cuda_graph(CudaGraphMode mode, const CudaGraphFacts& facts);

// Eager steps of the run before the capture (resumed runs too). One is enough and needed: the first step
// makes what a capture must not (cuDNN's algorithm choice and plans per shape, the allocator's first blocks,
// NCCL's lazy connection setup on the first all-reduce) and the SGD's first step initializes the momentum
// buffer with a different kernel than every later step, which the graph replays. Nothing else is lazy: the
// reducer's buckets are fixed at construction (dist/reducer.h), and every later step is like the second.
inline constexpr std::int64_t kCudaGraphWarmupSteps = 1;

// A graph has one batch shape: with graphs the training loader drops the epoch's last partial batch
// (PyTorch's drop_last); eager steps keep it.
inline bool train_drop_last(const CudaGraphPlan& plan) { return plan.capture; }

}  // namespace engine::apps
