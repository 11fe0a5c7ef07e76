#pragma once
// The Reducer's timeline (ReducerOptions::record_timeline): per bucket of a synced backward, when its last
// gradient arrived, when its all-reduce was queued, started and ended, and when finish() was called, in ms
// from the step start. Host clock readings (and gloo's Work::host_span) for CPU gradients; CUDA timing events
// on the compute and communication streams, read once the step is done, for CUDA gradients. See
// dist/reducer.h for what each time means; benchmarks/ddp/ddp_overlap prints it.

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "dist/process_group.h"

namespace engine::trace {
class Recorder;
}

namespace engine::dist {

// One bucket of a step's timeline; times in ms from the step start (Reducer::mark_step_start).
struct BucketTiming {
  std::size_t bucket = 0;  // index in Reducer::buckets(): bucket 0 launches first
  std::size_t bytes = 0;   // bytes all-reduced (the bf16 copy's under compression)
  double ready_ms = 0;     // the bucket's last gradient was written (grad-ready hook; CUDA: compute stream)
  double queued_ms = 0;    // its all-reduce was queued (buckets queue in order, so possibly after ready)
  double start_ms = 0;     // the all-reduce started (gloo: on the communication thread; CUDA: comm stream)
  double end_ms = 0;       // the all-reduce ended
};

struct StepTimeline {
  std::vector<BucketTiming> buckets;  // in launch order; empty before the first synced step
  double backward_end_ms = 0;         // finish() was called (CUDA: the compute stream reached that point)
};

// cnn_train --trace: the timeline's all-reduces on `recorder`'s communication track, one span per bucket from
// its start to its end ("all-reduce bucket B"), anchored at span `anchor`, which began when the step start
// was marked: the caller opens it with trace::Recorder::begin_at at the time mark() returned (host clock: the
// same reading; on a GPU its event right after the timeline's on the same stream). Its
// args: the bytes, `bucket_params[b]` (its parameters' names), when the bucket was ready and queued.
void add_to_trace(const StepTimeline& timeline, const std::vector<std::string>& bucket_params,
                  trace::Recorder& recorder, std::size_t anchor);

// The records. Streams are `void*` (cudaStream_t); `cuda` selects timing events over the host clock.
class ReducerTimeline {
 public:
  ReducerTimeline(std::vector<std::size_t> bucket_bytes, bool cuda);
  ~ReducerTimeline();
  ReducerTimeline(const ReducerTimeline&) = delete;
  ReducerTimeline& operator=(const ReducerTimeline&) = delete;

  // The step start; returns it as a host clock reading (CUDA: taken as its event is queued).
  std::chrono::steady_clock::time_point mark(void* compute);
  void on_ready(std::size_t b, void* compute);
  void on_queued(std::size_t b, void* compute);
  // CUDA: around the all-reduce on the communication stream (the host-side times come from the Work).
  void on_comm_start(std::size_t b, void* comm);
  void on_comm_end(std::size_t b, void* comm);
  void on_backward_end(void* compute);
  // After the step's works were waited on: the host records become the last timeline; CUDA events are read
  // later, by read().
  void end_step(const std::vector<std::unique_ptr<Work>>& works);
  const StepTimeline& read();

  bool marked = false;  // the coming synced backward has its step start

 private:
  using Clock = std::chrono::steady_clock;
  struct Events;  // CUDA timing events (reducer_timeline.cpp)

  std::vector<std::size_t> bytes_;  // per bucket, on the wire
  Clock::time_point step_start_, backward_end_;
  std::vector<Clock::time_point> ready_, queued_;
  StepTimeline last_;
  std::unique_ptr<Events> events_;  // CUDA gradients only
  bool pending_ = false;            // `events_` hold a finished step not yet read into `last_`
};

}  // namespace engine::dist
