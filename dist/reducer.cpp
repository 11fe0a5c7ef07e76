#include "dist/reducer.h"

#include <algorithm>
#include <exception>
#include <optional>
#include <string>

#include "core/error.h"
#include "core/stream.h"  // the communication stream and its events (made for CUDA gradients only)
#include "dist/reducer_timeline.h"
#include "kernels/ops/cast.h"
#include "kernels/ops/residual_add.h"

namespace engine::dist {

std::vector<Bucket> assign_buckets(const layers::Model& model, std::size_t first_bucket_bytes,
                                   std::size_t bucket_bytes) {
  ENGINE_CHECK(model.finalized(), "assign_buckets: model '{}' is not finalized", model.name());
  const auto& params = model.parameters();
  const auto elem = static_cast<std::int64_t>(dtype_size(model.flat_gradients().dtype()));
  std::vector<Bucket> buckets;
  std::int64_t end = model.flat_gradients().numel();  // the current bucket ends where the previous began
  Bucket current;
  for (std::size_t i = params.size(); i-- > 0;) {
    const std::int64_t start = params[i].offset;
    const auto cap = static_cast<std::int64_t>(buckets.empty() ? first_bucket_bytes : bucket_bytes);
    if (!current.params.empty() && (end - start) * elem > cap) {
      current.offset = params[current.params.back()].offset;
      current.numel = end - current.offset;
      end = current.offset;
      buckets.push_back(std::move(current));
      current = Bucket{};
    }
    current.params.push_back(i);
  }
  if (!current.params.empty()) {
    current.offset = 0;  // the last bucket reaches the start of the buffer
    current.numel = end;
    buckets.push_back(std::move(current));
  }
  return buckets;
}

struct Reducer::Impl {
  std::vector<std::unique_ptr<Work>> works;  // this step's queued all-reduces
  std::vector<Tensor> wire;  // per bucket: what goes on the wire (the slice, or its bf16 copy)
  Tensor accumulation;       // micro-batch gradient sums (allocated on first use)
  Tensor compressed;         // bf16 copy of the flat gradients, on the gradients' device
  // CUDA gradients only: the all-reduces run on their own stream, ordered after the compute stream per
  // bucket and before it at the end of the step.
  std::optional<Stream> comm_stream;
  std::vector<Event> bucket_events;
  std::optional<Event> done_event;
};

Reducer::Reducer(ProcessGroup& pg, layers::Model& model, const ReducerOptions& options)
    : pg_(pg), model_(model), options_(options), impl_(std::make_unique<Impl>()) {
  ENGINE_CHECK(model.finalized(), "Reducer: model '{}' is not finalized", model.name());
  ENGINE_CHECK(options.first_bucket_mb > 0 && options.bucket_mb > 0,
               "Reducer: bucket sizes must be positive (first {} MB, others {} MB)", options.first_bucket_mb,
               options.bucket_mb);
  const Tensor& grads = model.flat_gradients();
  ENGINE_CHECK(options.compression == GradCompression::None || grads.dtype() == DType::F32,
               "Reducer: bf16 gradient compression needs float32 gradients, got {}", grads.str());
  auto mb = [](double m) { return static_cast<std::size_t>(m * 1024.0 * 1024.0); };
  buckets_ = assign_buckets(model, mb(options.first_bucket_mb), mb(options.bucket_mb));
  bucket_of_param_.assign(model.parameters().size(), 0);
  for (std::size_t b = 0; b < buckets_.size(); ++b)
    for (std::size_t p : buckets_[b].params) bucket_of_param_[p] = b;
  pending_.resize(buckets_.size());
  ready_.assign(buckets_.size(), false);
  for (std::size_t b = 0; b < buckets_.size(); ++b) pending_[b] = buckets_[b].params.size();

  if (options.compression == GradCompression::Bf16) {
    impl_->compressed = Tensor::empty(grads.shape(), DType::BF16, grads.device(), model.context().stream);
  }
  for (const Bucket& bk : buckets_) {
    const Tensor& base = impl_->compressed.defined() ? impl_->compressed : grads;
    impl_->wire.push_back(base.flat_range(bk.offset, {bk.numel}));
  }
  if (grads.is_cuda()) {
    impl_->comm_stream.emplace(grads.device().index);
    impl_->bucket_events.resize(buckets_.size());
    impl_->done_event.emplace();
  }
  if (options.record_timeline) {
    ENGINE_CHECK(!grads.is_cuda() || pg.backend_kind() != Backend::Gloo,
                 "Reducer: the timeline of CUDA gradients needs a stream-ordered backend (nccl); gloo copies "
                 "them on its own thread, which stream events cannot time");
    std::vector<std::size_t> bytes;
    for (const Tensor& w : impl_->wire) bytes.push_back(w.nbytes());
    timeline_ = std::make_unique<ReducerTimeline>(std::move(bytes), grads.is_cuda());
  }
  model.set_grad_ready_hook([this](std::size_t i) { on_grad_ready(i); });
}

Reducer::~Reducer() {
  model_.set_grad_ready_hook({});
  // Queued work references our buffers: let it end before they go (errors were reported by finish()).
  for (auto& w : impl_->works) {
    try {
      w->wait();
    } catch (const std::exception&) {  // NOLINT(bugprone-empty-catch): already failing
    }
  }
}

void Reducer::set_sync(bool sync) {
  ENGINE_CHECK(next_to_launch_ == 0 && impl_->works.empty(), "Reducer::set_sync in the middle of a backward");
  sync_ = sync;
}

std::chrono::steady_clock::time_point Reducer::mark_step_start() {
  ENGINE_CHECK(timeline_, "Reducer::mark_step_start needs ReducerOptions::record_timeline");
  ENGINE_CHECK(next_to_launch_ == 0 && impl_->works.empty(),
               "Reducer::mark_step_start in the middle of a backward");
  return timeline_->mark(model_.context().stream);
}

const StepTimeline& Reducer::timeline() {
  ENGINE_CHECK(timeline_, "Reducer::timeline needs ReducerOptions::record_timeline");
  return timeline_->read();
}

void Reducer::trace_timeline(trace::Recorder& recorder, std::size_t anchor) {
  std::vector<std::string> names;  // per bucket: its parameters, in the order backward writes them
  for (const Bucket& b : buckets_) {
    std::string joined;
    for (const std::size_t p : b.params) joined += (joined.empty() ? "" : " ") + model_.parameters()[p].name;
    names.push_back(std::move(joined));
  }
  add_to_trace(timeline(), names, recorder, anchor);
}

void Reducer::stop_timeline() {
  ENGINE_CHECK(next_to_launch_ == 0 && impl_->works.empty(),
               "Reducer::stop_timeline in the middle of a backward");
  timeline_.reset();  // CUDA events still pending are released by the driver once they complete
}

void Reducer::on_grad_ready(std::size_t param_index) {
  ENGINE_CHECK(param_index < bucket_of_param_.size(), "Reducer: unknown parameter index {}", param_index);
  const std::size_t b = bucket_of_param_[param_index];
  ENGINE_CHECK(pending_[b] > 0, "Reducer: parameter '{}' reported its gradient twice in one backward",
               model_.parameters()[param_index].name);
  if (timeline_ && sync_ && !timeline_->marked) timeline_->mark(model_.context().stream);  // unmarked step
  if (--pending_[b] > 0) return;
  ready_[b] = true;
  if (timeline_ && sync_) timeline_->on_ready(b, model_.context().stream);
  // Launch in bucket order, whatever order the buckets complete in: every rank queues the same sequence.
  while (next_to_launch_ < buckets_.size() && ready_[next_to_launch_]) bucket_ready(next_to_launch_++);
}

void Reducer::bucket_ready(std::size_t b) {
  const Bucket& bk = buckets_[b];
  const Tensor slice = model_.flat_gradients().flat_range(bk.offset, {bk.numel});
  void* compute = model_.context().stream;
  if (!sync_) {  // a micro-batch: keep the sum locally, communicate nothing
    if (!impl_->accumulation.defined()) {
      impl_->accumulation =
          Tensor::zeros(model_.flat_gradients().shape(), slice.dtype(), slice.device(), compute);
    }
    Tensor acc = impl_->accumulation.flat_range(bk.offset, {bk.numel});
    if (accumulated_) {
      ops::residual_add(model_.context(), acc, slice, acc);
    } else {
      acc.copy_from(slice, compute);
    }
    return;
  }
  if (accumulated_) {  // the micro-batches' sum joins this backward's gradients
    ops::residual_add(model_.context(), slice, impl_->accumulation.flat_range(bk.offset, {bk.numel}), slice);
  }

  const Tensor& wire = impl_->wire[b];
  ReduceOp op = ReduceOp::Avg;
  if (impl_->compressed.defined()) {  // round to bf16 and sum; finish() widens and divides
    ops::cast_to_bf16(model_.context(), slice, wire);
    op = ReduceOp::Sum;
  }
  if (timeline_) timeline_->on_queued(b, compute);
  void* comm = nullptr;
  if (impl_->comm_stream) {
    Event& ev = impl_->bucket_events[b];
    ev.record(static_cast<cudaStream_t>(compute));
    ev.wait_on(impl_->comm_stream->get());
    comm = impl_->comm_stream->get();
  }
  if (timeline_) timeline_->on_comm_start(b, comm);
  impl_->works.push_back(pg_.all_reduce_async(wire, op, comm));
  if (timeline_) timeline_->on_comm_end(b, comm);
  ++allreduce_count_;
}

bool Reducer::abandon_step() noexcept {
  const bool launched = next_to_launch_ > 0;
  for (auto& w : impl_->works) {
    try {
      w->wait();  // gloo's thread may still read the buckets; NCCL's work returns at once
    } catch (const std::exception&) {  // NOLINT(bugprone-empty-catch): the step is abandoned already
    }
  }
  impl_->works.clear();
  for (std::size_t b = 0; b < buckets_.size(); ++b) pending_[b] = buckets_[b].params.size();
  std::fill(ready_.begin(), ready_.end(), false);
  next_to_launch_ = 0;
  if (timeline_) timeline_->marked = false;
  if (!sync_ && accumulated_ && launched) {  // a partial sum of this micro-batch is in the accumulation
    accumulated_ = false;
    return false;
  }
  return true;
}

void Reducer::finish() {
  const bool complete = next_to_launch_ == buckets_.size();
  if (timeline_ && sync_ && complete) timeline_->on_backward_end(model_.context().stream);
  std::string missing;
  if (!complete) {
    for (std::size_t b = next_to_launch_; b < buckets_.size() && missing.empty(); ++b)
      for (std::size_t p : buckets_[b].params)
        if (pending_[b] > 0) missing = model_.parameters()[p].name;
  }
  // Reset the step's state before anything can throw.
  for (std::size_t b = 0; b < buckets_.size(); ++b) pending_[b] = buckets_[b].params.size();
  std::fill(ready_.begin(), ready_.end(), false);
  next_to_launch_ = 0;
  if (timeline_ && sync_ && !complete) timeline_->marked = false;
  std::vector<std::unique_ptr<Work>> works = std::move(impl_->works);
  impl_->works.clear();
  for (auto& w : works) w->wait();  // gloo: the host waits; NCCL: returns at once
  ENGINE_CHECK(complete,
               "Reducer::finish: parameter '{}' (at least) got no gradient in this backward; every parameter "
               "of the model must take part in every step (or finish() was called before backward)",
               missing);
  if (timeline_ && sync_) timeline_->end_step(works);
  if (!sync_) {
    accumulated_ = true;
    return;
  }
  accumulated_ = false;
  if (impl_->comm_stream) {
    impl_->done_event->record(impl_->comm_stream->get());
    impl_->done_event->wait_on(static_cast<cudaStream_t>(model_.context().stream));
  }
  // After the wait: on CUDA the widening is queued on the compute stream behind the all-reduces.
  if (impl_->compressed.defined()) {
    ops::cast_from_bf16_scaled(model_.context(), impl_->compressed, model_.flat_gradients(),
                               1.0f / static_cast<float>(pg_.world_size()));
  }
}

}  // namespace engine::dist
