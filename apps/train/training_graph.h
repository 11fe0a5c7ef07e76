#pragma once
// TrainingGraph: the Trainer's training step captured once as a CUDA graph (core/cuda_graph.h) into its own
// memory pool (core/caching_allocator.h), and replayed once per later step after the host publishes that
// step's StepState (apps/train/step_state.h). The kernels read what changes per step from the state's device
// buffer: the SGD's learning rate, the dropout offset, the augmentation's epoch and batch offset, the loss
// slot (device_refs()); the Trainer wires those addresses into the optimizer, model context, loader and loss
// before the first step, so the eager warm-up steps read the same buffer and run the very kernels the graph
// replays (an eager step and a replay are equal bit for bit in deterministic mode).
//
// No host code runs in a replay, so what the eager step advanced on the host is advanced here by the amounts
// the captured step advanced it: the context's dropout offset (dropout_offset_after), the model's host
// counters (BatchNorm's num_batches_tracked) and the optimizer's step count.
//
// CUDA builds only (constructing one elsewhere throws).

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "apps/train/step_state.h"
#include "layers/model.h"
#include "optim/sgd.h"

namespace engine::apps {

// The step state's device addresses, one per per-step value.
struct StepDeviceRefs {
  const double* lr = nullptr;
  const std::uint64_t* dropout_offset = nullptr;
  const std::uint64_t* augment_epoch = nullptr;
  const std::int64_t* batch_offset = nullptr;
  const std::int64_t* loss_slot = nullptr;
};

// The host state a training step advances: the context's dropout offset (one per training-mode Dropout
// forward), the model's host counters (BatchNorm's num_batches_tracked) and the optimizer's step count. A
// replay runs no host code, so the TrainingGraph measures the captured step's advance and applies it after
// each replay. Pure host code (tests/cpu/training_graph_host_test.cpp checks it against eager CPU steps).
struct HostStepMark {
  std::uint64_t dropout_offset = 0;
  std::vector<std::int64_t> counters;  // Model::counters() order
  std::int64_t optimizer_steps = 0;
};
struct HostStepAdvance {
  std::uint64_t dropout_forwards = 0;
  std::vector<std::int64_t> counters;
  std::int64_t optimizer_steps = 0;
};
HostStepMark mark_host_state(const layers::Model& model, const optim::Sgd& sgd);
// after - before; throws engine::Error when something went backwards or the counter lists differ.
HostStepAdvance host_advance(const HostStepMark& before, const HostStepMark& after);
void restore_host_state(const HostStepMark& mark, layers::Model& model, optim::Sgd& sgd);
void apply_host_advance(const HostStepAdvance& advance, layers::Model& model, optim::Sgd& sgd);

class TrainingGraph {
 public:
  // On the model's CUDA device and stream; `model` and `sgd` must outlive this object.
  TrainingGraph(layers::Model& model, optim::Sgd& sgd);
  // Waits for the stream, destroys the graph and releases its pool (unchecked: may run during unwinding).
  ~TrainingGraph();
  TrainingGraph(const TrainingGraph&) = delete;
  TrainingGraph& operator=(const TrainingGraph&) = delete;

  StepDeviceRefs device_refs() const;

  // Before every step, eager or replayed: queues the copy of `state` to the device on the model's stream, and
  // sets the context's dropout_step_base to state.dropout_offset (the eager Dropout forwards index from it).
  void publish(const StepState& state);

  // Captures `step` (the whole training step, queued on the model's stream, the other streams it uses forked
  // from it and joined back) into the graph. "" on success: the host state is then the step's end, as after
  // an eager step, and launch_captured() runs the captured step's work. Else the reason, with the host's
  // dropout offset, counters and optimizer step count restored to the step's start (the step never ran).
  std::string capture(const std::function<void()>& step);
  bool captured() const;
  // The work of the step just captured (its host side already ran during capture()).
  void launch_captured();
  // A later step: launches the graph and advances the host's state as the captured step did.
  void replay();

  std::size_t kernel_nodes() const;                                             // of the captured step
  std::uint64_t dropout_forwards() const { return advance_.dropout_forwards; }  // per captured step

 private:
  struct Impl;
  layers::Model& model_;
  optim::Sgd& sgd_;
  std::unique_ptr<Impl> impl_;
  HostStepAdvance advance_;  // the captured step's
  StepState last_published_;
};

}  // namespace engine::apps
