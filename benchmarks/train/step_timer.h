#pragma once
// StepTimer: where the time of a training step goes, phase by phase (data, forward, backward, all-reduce,
// optimizer), without slowing the step down.
//
// On a CUDA device the marks are CUDA events recorded on the compute stream, so they time the GPU's work and
// never make the host wait: the host keeps queuing steps ahead, and the events are read once, after the
// caller has synchronized, at the end. A phase's time is then the GPU time between its two marks, which
// includes any time the GPU sat idle waiting for the host to queue that phase (that idle time is part of
// what the phase costs). On the CPU the marks are host clock readings.
//
// Per phase the median over the timed steps is reported, so one slow step (a cuDNN plan, an allocation)
// does not move it.

#include <array>
#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "core/device.h"

namespace engine::bench {

enum class Phase : std::size_t { Data, Forward, Backward, AllReduce, Optimizer };
inline constexpr std::size_t kPhases = 5;
const char* phase_name(Phase p);

class StepTimer {
 public:
  // `stream` is the compute stream (a cudaStream_t) on a CUDA device; ignored on the CPU. `max_steps` marks
  // are prepared up front (events are created before timing starts).
  StepTimer(Device device, void* stream, std::size_t max_steps);
  ~StepTimer();
  StepTimer(const StepTimer&) = delete;
  StepTimer& operator=(const StepTimer&) = delete;

  void begin_step();  // the mark before the data phase
  void end(Phase p);  // the mark at the end of phase p (phases in order; a skipped phase takes 0)
  std::size_t steps() const { return steps_; }

  // Per-phase median (ms) over the recorded steps. CUDA: call after synchronizing the stream.
  std::array<double, kPhases> median_ms() const;
  // Median of whole steps (first mark to last).
  double median_step_ms() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::size_t steps_ = 0;
  std::size_t max_steps_;
};

}  // namespace engine::bench
