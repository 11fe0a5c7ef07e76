#pragma once
// StepStateBuffer: the StepState (apps/train/step_state.h) the next step's kernels read, in device memory,
// written by one asynchronous copy from pinned host memory per step, queued on the compute stream before the
// step (outside any graph), so the copy is ordered before the step's kernels and after the previous step's.
//
// The host does not wait for that copy: it writes into a ring of pinned slots, and waits only when it is
// about to overwrite a slot whose copy the GPU has not made yet (kSlots steps ahead of the GPU; the trainer
// synchronizes more often than that anyway). CUDA builds only; constructing one elsewhere throws.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "apps/train/step_state.h"
#include "core/tensor.h"

namespace engine::apps {

class StepStateBuffer {
 public:
  static constexpr int kSlots = 32;

  StepStateBuffer(int device, void* stream);
  ~StepStateBuffer();
  StepStateBuffer(const StepStateBuffer&) = delete;
  StepStateBuffer& operator=(const StepStateBuffer&) = delete;

  // Queues the copy of `state` into the device buffer on the stream (checked).
  void publish(const StepState& state);

  // The device address of one field, for a kernel that reads it (stable for the buffer's life, so a graph
  // can be captured with it): e.g. device_field<double>(offsetof(StepState, lr)).
  template <typename T>
  const T* device_field(std::size_t offset) const {
    return reinterpret_cast<const T*>(device_.data<std::uint8_t>() + offset);
  }
  const StepState* device_state() const {
    return reinterpret_cast<const StepState*>(device_.data<std::uint8_t>());
  }

 private:
  struct Events;  // one event per pinned slot, recorded after its copy
  void* stream_;
  Tensor pinned_;  // kSlots StepStates
  Tensor device_;  // one StepState
  std::unique_ptr<Events> events_;
  int next_slot_ = 0;
};

}  // namespace engine::apps
