#pragma once
// Reducer: DDP's gradient averaging, overlapped with backward (PyTorch's DistributedDataParallel reducer).
//
// Buckets are slices of the model's flat gradient buffer, filled in REVERSE parameter order, the order
// backward produces the gradients: bucket 0 holds the last parameters (the classifier), the last bucket the
// first ones. A bucket closes when the next parameter would take it past its cap: first_bucket_mb (1 MB) for
// bucket 0, so communication starts early, and bucket_mb (25 MB) for the others. A parameter larger than a
// cap gets a bucket of its own. Each bucket's slice runs from its first parameter's offset to the next
// bucket's start, so the buckets tile the whole flat buffer (the zero alignment padding rides along).
//
// The Reducer installs itself as the model's grad-ready hook. When the last gradient of a bucket has been
// written, and every earlier bucket has been launched (buckets launch in order, the same order on every
// rank), the bucket is all-reduced with ReduceOp::Avg:
//   CUDA: an event recorded on the compute stream (the model's context stream), the communication stream
//         waits on it, and the all-reduce is queued there; finish() makes the compute stream wait for the
//         communication stream with another event. No host synchronization (NCCL); with gloo the host copies
//         make finish() wait on the host.
//   CPU:  the all-reduce is queued on the gloo group's communication thread, which runs it while backward
//         goes on; finish() waits for the buckets.
// Call finish() after model.backward() and before the optimizer step; it throws engine::Error if a
// parameter got no gradient in that backward (every parameter must take part in every step).
//
// Gradient accumulation (PyTorch's no_sync): with set_sync(false) a backward communicates nothing, and since
// backward OVERWRITES the model's gradients (layers/model.h), the Reducer adds each finished bucket into its
// own accumulation buffer instead. The first backward with set_sync(true) after such micro-batches adds the
// accumulated sum into the gradients bucket by bucket before all-reducing them. So K micro-batches
// all-reduce once, and the result is the rank-average of the SUM of the K micro-batch gradients, as
// PyTorch's .grad accumulation (divide the loss, or the learning rate, by K for the mean).
//
// bf16 compression (`--grad-compression bf16`, float32 gradients on the CPU or CUDA): each bucket is rounded
// to bfloat16 (nearest even) into the Reducer's bf16 copy of the gradient buffer, all-reduced as a sum (half
// the bytes on the wire), and finish() widens the whole copy back into the gradients times 1/world_size.
//   CUDA: the rounding is a kernel on the compute stream, queued before the bucket's event, so the
//         communication stream sees the rounded bucket; the widening is a kernel queued on the compute stream
//         after it waits for the communication stream. Still no host synchronization (kernels/cuda/cast.h
//         uses the host's rounding, so both devices send the same bits).
//   CPU:  both are loops on the calling thread (the rounding in the grad-ready hook, during backward).
//
// Timeline (ReducerOptions::record_timeline, off by default; off, nothing is recorded and nothing changes):
// for each synced backward it records, per bucket, when its last gradient arrived (ready), when its
// all-reduce was queued, when the all-reduce started and ended on the communication side, and when finish()
// was called (the end of backward), in milliseconds from the step start the caller marks with
// mark_step_start() (before forward; unmarked, the backward's first gradient is the start). It shows whether
// the all-reduces overlap backward (benchmarks/ddp/ddp_overlap.cpp).
//   CPU:  steady_clock readings on the calling thread; start and end are the gloo communication thread's
//         (Work::host_span). make_single_process_group's no-op work has no span: start = end = queued.
//   CUDA: timing events: the step start, ready, queued and the backward end on the compute stream, start and
//         end on the communication stream around the all-reduce; timeline() reads them once the step's work
//         is done (it waits for them, as does the next mark_step_start() for the previous step's). Needs a
//         stream-ordered backend (NCCL; a world of one): gloo's host copies of CUDA tensors run on its own
//         thread, which stream events cannot time, so that combination is refused.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "dist/process_group.h"
#include "dist/reducer_timeline.h"
#include "layers/model.h"

namespace engine::dist {

struct Bucket {
  std::int64_t offset = 0;          // first element in the flat gradient buffer
  std::int64_t numel = 0;           // elements of the slice (padding included)
  std::vector<std::size_t> params;  // indices into Model::parameters(), in the order backward produces them
};

// The buckets of `model` (finalized) for the caps in bytes of its dtype. Pure: the tests check it on the zoo.
std::vector<Bucket> assign_buckets(const layers::Model& model, std::size_t first_bucket_bytes,
                                   std::size_t bucket_bytes);

enum class GradCompression { None, Bf16 };

struct ReducerOptions {
  double first_bucket_mb = 1.0;
  double bucket_mb = 25.0;
  GradCompression compression = GradCompression::None;
  bool record_timeline = false;  // Reducer::timeline(); costs a few clock readings (CUDA: events) per bucket
};

class Reducer {
 public:
  // Installs the grad-ready hook on `model` (finalized, on the group's kind of device). `pg` and `model`
  // must outlive the Reducer.
  Reducer(ProcessGroup& pg, layers::Model& model, const ReducerOptions& options = {});
  ~Reducer();  // removes the hook
  Reducer(const Reducer&) = delete;
  Reducer& operator=(const Reducer&) = delete;

  // false for the micro-batches of an accumulation whose gradients must not be communicated yet.
  void set_sync(bool sync);
  bool sync() const { return sync_; }

  // After model.backward(): the averaged gradients are in Model::flat_gradients() for work queued on the
  // compute stream from now on (CPU: on return).
  void finish();

  // After a backward that failed before finish() (an exception thrown from a layer or from this Reducer's
  // hook, a CUDA graph capture that ended inside the step): drops the step's partial state (bucket counts,
  // queued all-reduces, waited for and their errors dropped), so the next set_sync() and backward start
  // clean. Returns true when the failed backward can simply be run again: always, except for a micro-batch
  // (set_sync(false)) that had already added buckets into a running accumulation, which cannot be undone;
  // the accumulation is then dropped and the caller must re-run the whole group (or fail).
  bool abandon_step() noexcept;

  // With record_timeline: the step start the next synced backward's timeline is measured from (call it
  // before forward). CUDA: an event on the compute stream; waits for the previous step's timeline events.
  // Returns the host clock's reading of it, for a trace's step span (trace::Recorder::begin_at).
  std::chrono::steady_clock::time_point mark_step_start();
  // With record_timeline: the timeline of the last synced backward (empty before one). CUDA: waits until its
  // events are done (the caller normally synchronized the step already).
  const StepTimeline& timeline();
  // With record_timeline: the last synced backward's all-reduces on `recorder`'s communication track,
  // anchored at span `anchor`, begun at mark_step_start()'s time (add_to_trace in
  // dist/reducer_timeline.h); each names its bucket's parameters.
  void trace_timeline(trace::Recorder& recorder, std::size_t anchor);
  // With record_timeline: records nothing from here on (cnn_train --trace after its traced steps: on a GPU
  // each step's start would wait for the previous step's events). Not in the middle of a backward.
  void stop_timeline();

  const std::vector<Bucket>& buckets() const { return buckets_; }
  // Bucket all-reduces queued since construction (the accumulation test counts them).
  std::int64_t allreduce_count() const { return allreduce_count_; }

 private:
  struct Impl;
  void on_grad_ready(std::size_t param_index);
  void bucket_ready(std::size_t b);

  ProcessGroup& pg_;
  layers::Model& model_;
  ReducerOptions options_;
  std::vector<Bucket> buckets_;
  std::vector<std::size_t> bucket_of_param_;
  std::vector<std::size_t> pending_;  // per bucket: gradients not yet written in this backward
  std::vector<bool> ready_;
  std::size_t next_to_launch_ = 0;
  bool sync_ = true;
  bool accumulated_ = false;  // the accumulation buffer holds micro-batch gradients
  std::int64_t allreduce_count_ = 0;
  std::unique_ptr<Impl> impl_;
  std::unique_ptr<ReducerTimeline> timeline_;  // only with record_timeline
};

}  // namespace engine::dist
