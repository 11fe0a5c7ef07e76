#pragma once
// StepState: the values that change from one training step to the next, in one small device buffer that the
// step's kernels read, instead of kernel arguments. A CUDA graph replays its kernels with the arguments they
// were captured with, so what varies per step must come from memory the graph reads (the graph mode of
// issue 17); the host writes the next step's values with one asynchronous copy from pinned memory before the
// step is queued (StepStateBuffer, apps/train/step_state_buffer.h), outside the graph.
//
// StepState is plain data with one layout on the host and the device; a kernel gets a pointer to the field
// it reads (StepStateBuffer::device_field). make_step_state() is the one place that says which value each
// field takes at a step, so the eager loop and the graph agree (tests/cpu/step_state_test.cpp).

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace engine::apps {

struct StepState {
  // The step's base learning rate; parameter groups scale it on the device (lr * lr_scale, as the fused SGD
  // kernel does with its argument today), so one value serves every group.
  double lr = 0.0;
  // Optimizer steps done before this one (0 for the first step of the run).
  std::int64_t optimizer_step = 0;
  // The model context's dropout_offset at the step's start: the k-th training-mode Dropout forward of the
  // step uses offset dropout_offset + k, as the eager loop's dropout_offset++ gives.
  std::uint64_t dropout_offset = 0;
  // The augmentation's epoch (the seed of this epoch's crops and flips) and the batch's first entry in the
  // epoch's index list on the device.
  std::uint64_t augment_epoch = 0;
  std::int64_t batch_offset = 0;
  // The slot of this step's loss in the trainer's per-epoch loss array (step_losses_).
  std::int64_t loss_slot = 0;
};
static_assert(std::is_trivially_copyable_v<StepState> && std::is_standard_layout_v<StepState>,
              "StepState is copied to the device byte for byte");
static_assert(sizeof(StepState) == 48, "the device layout: six 8-byte fields, no padding");

// Where the step stands, as the trainer's loop knows it before queuing the step.
struct StepPosition {
  std::uint64_t epoch = 0;
  std::int64_t loader_batch = 0;     // the loader's batches handed out since start_epoch (data::Loader's k)
  std::int64_t batches_before = 0;   // the epoch's batches done before start_epoch (a mid-epoch resume)
  std::int64_t batch_size = 0;       // the loader's batch size on this rank
  std::int64_t optimizer_steps = 0;  // optimizer steps done before this step
  std::uint64_t dropout_offset = 0;  // the model context's dropout offset now
  double lr = 0.0;                   // the learning rate this step's SGD applies
};

// The step state for `p`; throws engine::Error for a negative count or position, or an lr that is not a
// finite non-negative number (the optimizer would refuse it too, but here before it is queued).
StepState make_step_state(const StepPosition& p);

// The dropout offset after a step with `dropout_forwards` training-mode Dropout forwards: what the eager loop
// leaves in the context, and what a replayed graph must leave there too (the host advances it itself, since
// no host code runs during a replay).
std::uint64_t dropout_offset_after(const StepState& s, std::uint64_t dropout_forwards);

}  // namespace engine::apps
