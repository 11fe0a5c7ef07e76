#include "dist/reducer.h"

#include <algorithm>
#include <chrono>
#include <optional>

#include "core/error.h"
#if ENGINE_HAVE_CUDA
#include "core/stream.h"
#include "kernels/cuda/cast.h"
#include "kernels/cuda/residual_add.h"
#endif

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
#if ENGINE_HAVE_CUDA
  std::optional<Stream> comm_stream;
  std::vector<Event> bucket_events;
  std::optional<Event> done_event;
#endif
};

// The timeline's records (ReducerOptions::record_timeline): host clock readings, or CUDA timing events read
// once the step is done.
struct Reducer::Timeline {
  using Clock = std::chrono::steady_clock;

  Timeline(std::vector<std::size_t> bucket_bytes, [[maybe_unused]] bool cuda)
      : bytes(std::move(bucket_bytes)) {
    const std::size_t n = bytes.size();
    ready.resize(n);
    queued.resize(n);
#if ENGINE_HAVE_CUDA
    if (cuda) {
      events.emplace();
      for (auto* v : {&events->ready, &events->queued, &events->start, &events->end}) {
        v->reserve(n);
        for (std::size_t b = 0; b < n; ++b) v->emplace_back(/*enable_timing=*/true);
      }
    }
#endif
  }

  void mark([[maybe_unused]] void* compute) {
#if ENGINE_HAVE_CUDA
    if (events) {
      if (pending) read();  // the previous step's events are about to be recorded again
      events->step_start.record(static_cast<cudaStream_t>(compute));
      marked = true;
      return;
    }
#endif
    step_start = Clock::now();
    marked = true;
  }

  void on_ready(std::size_t b, [[maybe_unused]] void* compute) {
#if ENGINE_HAVE_CUDA
    if (events) {
      events->ready[b].record(static_cast<cudaStream_t>(compute));
      return;
    }
#endif
    ready[b] = Clock::now();
  }

  void on_queued(std::size_t b, [[maybe_unused]] void* compute) {
#if ENGINE_HAVE_CUDA
    if (events) {
      events->queued[b].record(static_cast<cudaStream_t>(compute));
      return;
    }
#endif
    queued[b] = Clock::now();
  }

  // CUDA: around the all-reduce on the communication stream (the host-side times come from the Work).
  void on_comm_start([[maybe_unused]] std::size_t b, [[maybe_unused]] void* comm) {
#if ENGINE_HAVE_CUDA
    if (events) events->start[b].record(static_cast<cudaStream_t>(comm));
#endif
  }
  void on_comm_end([[maybe_unused]] std::size_t b, [[maybe_unused]] void* comm) {
#if ENGINE_HAVE_CUDA
    if (events) events->end[b].record(static_cast<cudaStream_t>(comm));
#endif
  }

  void on_backward_end([[maybe_unused]] void* compute) {
#if ENGINE_HAVE_CUDA
    if (events) {
      events->backward_end.record(static_cast<cudaStream_t>(compute));
      return;
    }
#endif
    backward_end = Clock::now();
  }

  // After the step's works were waited on: the host records become `last`; CUDA events are read later.
  void end_step(const std::vector<std::unique_ptr<Work>>& works) {
    marked = false;
#if ENGINE_HAVE_CUDA
    if (events) {
      pending = true;
      return;
    }
#endif
    auto ms = [this](Clock::time_point t) {
      return std::chrono::duration<double, std::milli>(t - step_start).count();
    };
    last.buckets.clear();
    for (std::size_t b = 0; b < bytes.size(); ++b) {
      const std::optional<Work::HostSpan> span = works[b]->host_span();
      last.buckets.push_back(BucketTiming{.bucket = b,
                                          .bytes = bytes[b],
                                          .ready_ms = ms(ready[b]),
                                          .queued_ms = ms(queued[b]),
                                          .start_ms = ms(span ? span->start : queued[b]),
                                          .end_ms = ms(span ? span->end : queued[b])});
    }
    last.backward_end_ms = ms(backward_end);
  }

  const StepTimeline& read() {
#if ENGINE_HAVE_CUDA
    if (events && pending) {
      const Event& t0 = events->step_start;
      auto ms = [&t0](const Event& e) {
        e.synchronize();
        return static_cast<double>(e.elapsed_ms_since(t0));
      };
      last.buckets.clear();
      for (std::size_t b = 0; b < bytes.size(); ++b) {
        last.buckets.push_back(BucketTiming{.bucket = b,
                                            .bytes = bytes[b],
                                            .ready_ms = ms(events->ready[b]),
                                            .queued_ms = ms(events->queued[b]),
                                            .start_ms = ms(events->start[b]),
                                            .end_ms = ms(events->end[b])});
      }
      last.backward_end_ms = ms(events->backward_end);
      pending = false;
    }
#endif
    return last;
  }

  std::vector<std::size_t> bytes;  // per bucket, on the wire
  bool marked = false;             // the coming synced backward has its step start
  Clock::time_point step_start, backward_end;
  std::vector<Clock::time_point> ready, queued;
  StepTimeline last;
#if ENGINE_HAVE_CUDA
  struct Events {
    Event step_start{true}, backward_end{true};
    std::vector<Event> ready, queued, start, end;  // per bucket
  };
  std::optional<Events> events;  // CUDA gradients
  bool pending = false;          // `events` hold a finished step not yet read into `last`
#endif
};

namespace {

// dst += src elementwise on the CPU (float or double) or, for float, on the GPU in `stream`.
void add_into(const Tensor& dst, const Tensor& src, [[maybe_unused]] void* stream) {
  const std::int64_t n = dst.numel();
  if (dst.is_cuda()) {
#if ENGINE_HAVE_CUDA
    ENGINE_CHECK(dst.dtype() == DType::F32, "gradient accumulation on CUDA needs float32, got {}", dst.str());
    cuda::residual_add_forward(static_cast<cudaStream_t>(stream), dst.data<float>(), src.data<float>(),
                               dst.data<float>(), n);
    return;
#endif
  }
  if (dst.dtype() == DType::F64) {
    double* d = dst.data<double>();
    const double* s = src.data<double>();
    for (std::int64_t i = 0; i < n; ++i) d[i] += s[i];
  } else {
    float* d = dst.data<float>();
    const float* s = src.data<float>();
    for (std::int64_t i = 0; i < n; ++i) d[i] += s[i];
  }
}

// wire = bf16(grads), rounded to nearest even; on CUDA queued on `stream`.
void compress(const Tensor& grads, const Tensor& wire, [[maybe_unused]] void* stream) {
  const std::int64_t n = grads.numel();
  if (grads.is_cuda()) {
#if ENGINE_HAVE_CUDA
    cuda::cast_f32_to_bf16(static_cast<cudaStream_t>(stream), grads.data<float>(), wire.data<bfloat16>(), n);
    return;
#endif
  }
  const float* g = grads.data<float>();
  bfloat16* w = wire.data<bfloat16>();
  for (std::int64_t i = 0; i < n; ++i) w[i] = to_bfloat16(g[i]);
}

// grads = float(wire) * scale; on CUDA queued on `stream`.
void decompress(const Tensor& wire, const Tensor& grads, float scale, [[maybe_unused]] void* stream) {
  const std::int64_t n = grads.numel();
  if (grads.is_cuda()) {
#if ENGINE_HAVE_CUDA
    cuda::cast_bf16_to_f32_scaled(static_cast<cudaStream_t>(stream), wire.data<bfloat16>(),
                                  grads.data<float>(), n, scale);
    return;
#endif
  }
  float* g = grads.data<float>();
  const bfloat16* w = wire.data<bfloat16>();
  for (std::int64_t i = 0; i < n; ++i) g[i] = from_bfloat16(w[i]) * scale;
}

}  // namespace

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
#if ENGINE_HAVE_CUDA
  if (grads.is_cuda()) {
    impl_->comm_stream.emplace(grads.device().index);
    impl_->bucket_events.resize(buckets_.size());
    impl_->done_event.emplace();
  }
#endif
  if (options.record_timeline) {
    ENGINE_CHECK(!grads.is_cuda() || pg.backend() != "gloo",
                 "Reducer: the timeline of CUDA gradients needs a stream-ordered backend (nccl); gloo copies "
                 "them on its own thread, which stream events cannot time");
    std::vector<std::size_t> bytes;
    for (const Tensor& w : impl_->wire) bytes.push_back(w.nbytes());
    timeline_ = std::make_unique<Timeline>(std::move(bytes), grads.is_cuda());
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

void Reducer::mark_step_start() {
  ENGINE_CHECK(timeline_, "Reducer::mark_step_start needs ReducerOptions::record_timeline");
  ENGINE_CHECK(next_to_launch_ == 0 && impl_->works.empty(),
               "Reducer::mark_step_start in the middle of a backward");
  timeline_->mark(model_.context().stream);
}

const StepTimeline& Reducer::timeline() {
  ENGINE_CHECK(timeline_, "Reducer::timeline needs ReducerOptions::record_timeline");
  return timeline_->read();
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
      add_into(acc, slice, compute);
    } else {
      acc.copy_from(slice, compute);
    }
    return;
  }
  if (accumulated_) add_into(slice, impl_->accumulation.flat_range(bk.offset, {bk.numel}), compute);

  const Tensor& wire = impl_->wire[b];
  ReduceOp op = ReduceOp::Avg;
  if (impl_->compressed.defined()) {  // round to bf16 and sum; finish() widens and divides
    compress(slice, wire, compute);
    op = ReduceOp::Sum;
  }
  if (timeline_) timeline_->on_queued(b, compute);
  void* comm = nullptr;
#if ENGINE_HAVE_CUDA
  if (impl_->comm_stream) {
    Event& ev = impl_->bucket_events[b];
    ev.record(static_cast<cudaStream_t>(compute));
    ev.wait_on(impl_->comm_stream->get());
    comm = impl_->comm_stream->get();
  }
#endif
  if (timeline_) timeline_->on_comm_start(b, comm);
  impl_->works.push_back(pg_.all_reduce_async(wire, op, comm));
  if (timeline_) timeline_->on_comm_end(b, comm);
  ++allreduce_count_;
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
#if ENGINE_HAVE_CUDA
  if (impl_->comm_stream) {
    impl_->done_event->record(impl_->comm_stream->get());
    impl_->done_event->wait_on(static_cast<cudaStream_t>(model_.context().stream));
  }
#endif
  // After the wait: on CUDA the widening is queued on the compute stream behind the all-reduces.
  if (impl_->compressed.defined()) {
    decompress(impl_->compressed, model_.flat_gradients(), 1.0f / static_cast<float>(pg_.world_size()),
               model_.context().stream);
  }
}

}  // namespace engine::dist
