#pragma once
// A trace of a few training steps in the Chrome trace-event format, which Perfetto (ui.perfetto.dev) and
// chrome://tracing open (cnn_train --trace FILE.json). Spans nest on tracks: each layer's forward and
// backward inside the step's forward and backward, the loss and the optimizer on the compute track, the wait
// for the next batch on the data track, each gradient bucket's all-reduce on the communication track, so the
// all-reduces are seen overlapping backward.
//
// The code being traced opens a TraceScope; it costs one pointer load while no Recorder is active, which is
// always, but for the steps a trace is taken of. Host-side work is timed with the steady clock; work queued
// on a CUDA stream with timing events on that stream (the host only queues it), read when the trace is
// written.

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/cuda_types.h"

namespace engine::trace {

enum class Track : int { kCompute = 0, kData = 1, kCommunication = 2 };

// One finished span, in microseconds from the recorder's start.
struct Span {
  std::string name;
  std::string category;  // "forward", "backward", "loss", "optimizer", "data", "allreduce", "step"
  Track track = Track::kCompute;
  double start_us = 0;
  double duration_us = 0;
  // Shown by the viewers when the span is selected (a bucket's bytes and parameters); name, value.
  std::vector<std::pair<std::string, std::string>> args;
};

class Recorder {
 public:
  // `stream`: nullptr to time everything with the host clock (the CPU device), else the CUDA stream the
  // compute track's work is queued on (a timing event is recorded on it now as the time origin).
  explicit Recorder(cudaStream_t stream = nullptr);
  ~Recorder();
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  using Clock = std::chrono::steady_clock;

  // Opens a span; close it with end(id). Spans on one track close in the reverse order they opened.
  std::size_t begin(std::string name, std::string category, Track track = Track::kCompute);
  // Opens a span that began at `start`, a steady-clock reading taken before now by another component's
  // timer (the reducer's step start), so the spans anchored on it and that timer's offsets share one origin.
  // A span timed by CUDA events (the compute track with a stream) ignores `start`: its event is queued now,
  // right after the other component's on the same stream.
  std::size_t begin_at(std::string name, std::string category, Clock::time_point start,
                       Track track = Track::kCompute);
  void end(std::size_t id);
  // A span measured elsewhere (the reducer's bucket timeline): it starts `offset_us` after span `anchor`
  // starts (on whatever clock timed the anchor) and lasts `duration_us`.
  void add_relative(std::string name, std::string category, Track track, std::size_t anchor, double offset_us,
                    double duration_us, std::vector<std::pair<std::string, std::string>> args = {});

  // Every span, CUDA ones read (this waits for their events). Sorted by start.
  std::vector<Span> spans();
  // The trace as Chrome trace-event JSON: complete ("X") events, one thread per track named after it, the
  // process named `process_name` (e.g. "rank 0"). Throws engine::Error naming `path` if it cannot be written.
  void write_json(const std::string& path, const std::string& process_name, int pid = 0);

 private:
  struct Pending;

  cudaStream_t stream_ = nullptr;
  Clock::time_point origin_;
  std::vector<std::unique_ptr<Pending>> pending_;  // in the order opened
  std::vector<Span> done_;
  struct CudaEvents;
  std::unique_ptr<CudaEvents> events_;  // CUDA only
};

// The recorder spans go to (nullptr: none, the usual case). Set by the training loop around traced steps.
Recorder* active();
void set_active(Recorder* recorder);

// Opens a span on the active recorder (if any) for its lifetime. `name` is a callable returning the span's
// name, called only while a trace is taken (a layer's name costs a string to build). The main thread only:
// the recorder is not shared between threads.
class TraceScope {
 public:
  template <typename NameFn>
  TraceScope(const char* category, NameFn&& name, Track track = Track::kCompute) : recorder_(active()) {
    if (recorder_ != nullptr) id_ = recorder_->begin(name(), category, track);
  }
  ~TraceScope() {
    if (recorder_ != nullptr) recorder_->end(id_);
  }
  TraceScope(const TraceScope&) = delete;
  TraceScope& operator=(const TraceScope&) = delete;

 private:
  Recorder* recorder_;
  std::size_t id_ = 0;
};

}  // namespace engine::trace
