#include "apps/training_graph.h"

#include <cstddef>
#include <utility>

#include "core/error.h"

#if ENGINE_HAVE_CUDA
#include "apps/step_state_buffer.h"
#include "core/caching_allocator.h"
#include "core/cuda_check.h"
#include "core/cuda_graph.h"
#endif

namespace engine::apps {

#if ENGINE_HAVE_CUDA

struct TrainingGraph::Impl {
  Impl(int device, void* stream) : state(device, stream), allocator(device_caching_allocator(device)) {}
  StepStateBuffer state;
  CachingAllocator& allocator;
  std::uint64_t pool = 0;  // 0: none yet
  CudaGraph graph;
};

TrainingGraph::TrainingGraph(layers::Model& model, optim::Sgd& sgd) : model_(model), sgd_(sgd) {
  const ExecutionContext& ctx = model.context();
  ENGINE_CHECK(ctx.device.is_cuda(), "TrainingGraph: the model is on {}, not a CUDA device",
               ctx.device.str());
  impl_ = std::make_unique<Impl>(ctx.device.index, ctx.stream);
}

TrainingGraph::~TrainingGraph() {
  if (!impl_) return;
  // The last replay must be done before the graph and its memory go.
  (void)cudaStreamSynchronize(static_cast<cudaStream_t>(model_.context().stream));
  impl_->graph = CudaGraph();
  if (impl_->pool != 0) {
    try {
      impl_->allocator.release_graph_pool(impl_->pool);
    } catch (
        ...) {  // NOLINT(bugprone-empty-catch): a destructor must not throw; the pool dies with the cache
    }
  }
}

StepDeviceRefs TrainingGraph::device_refs() const {
  const StepStateBuffer& s = impl_->state;
  StepDeviceRefs r;
  r.lr = s.device_field<double>(offsetof(StepState, lr));
  r.dropout_offset = s.device_field<std::uint64_t>(offsetof(StepState, dropout_offset));
  r.augment_epoch = s.device_field<std::uint64_t>(offsetof(StepState, augment_epoch));
  r.batch_offset = s.device_field<std::int64_t>(offsetof(StepState, batch_offset));
  r.loss_slot = s.device_field<std::int64_t>(offsetof(StepState, loss_slot));
  return r;
}

void TrainingGraph::publish(const StepState& state) {
  impl_->state.publish(state);
  model_.context().dropout_step_base = state.dropout_offset;
  last_published_ = state;
}

std::string TrainingGraph::capture(const std::function<void()>& step) {
  ENGINE_CHECK(!captured(), "TrainingGraph: the step is already captured");
  ExecutionContext& ctx = model_.context();
  const auto stream = static_cast<cudaStream_t>(ctx.stream);
  // The host state at the step's start, to measure the step's advance (or restore it after a failure).
  const std::uint64_t dropout_before = ctx.dropout_offset;
  const std::int64_t steps_before = sgd_.steps();
  std::vector<std::int64_t> counters_before;
  for (const layers::Counter& c : model_.counters()) counters_before.push_back(*c.value);

  if (impl_->pool == 0) impl_->pool = impl_->allocator.create_graph_pool();
  impl_->allocator.begin_graph_capture(ctx.stream, impl_->pool);
  std::string failed;
  try {
    failed = impl_->graph.capture(stream, step);
  } catch (...) {
    impl_->allocator.end_graph_capture(ctx.stream);
    throw;
  }
  impl_->allocator.end_graph_capture(ctx.stream);

  if (!failed.empty()) {
    // No graph uses the pool's memory: back to the shared cache (blocks in use when they are freed).
    impl_->allocator.release_graph_pool(impl_->pool);
    impl_->pool = 0;
    ctx.dropout_offset = dropout_before;
    sgd_.set_steps(steps_before);
    for (std::size_t i = 0; i < model_.counters().size(); ++i)
      *model_.counters()[i].value = counters_before[i];
    return failed;
  }
  ENGINE_CHECK(sgd_.steps() == steps_before + 1,
               "TrainingGraph: the captured step made {} optimizer steps, not one (a bug in the caller)",
               sgd_.steps() - steps_before);
  dropout_forwards_ = ctx.dropout_offset - dropout_before;
  ENGINE_CHECK(dropout_offset_after(last_published_, dropout_forwards_) == ctx.dropout_offset,
               "TrainingGraph: the step state published {} as the dropout offset, the step began at {}",
               last_published_.dropout_offset, dropout_before);
  counter_steps_.clear();
  for (std::size_t i = 0; i < model_.counters().size(); ++i)
    counter_steps_.push_back(*model_.counters()[i].value - counters_before[i]);
  return "";
}

bool TrainingGraph::captured() const { return impl_->graph.captured(); }

void TrainingGraph::launch_captured() {
  impl_->graph.launch(static_cast<cudaStream_t>(model_.context().stream));
}

void TrainingGraph::replay() {
  ENGINE_CHECK(captured(), "TrainingGraph: replay before a capture");
  ExecutionContext& ctx = model_.context();
  ENGINE_CHECK(last_published_.dropout_offset == ctx.dropout_offset,
               "TrainingGraph: the published step state is not this step's (dropout offset {} vs {})",
               last_published_.dropout_offset, ctx.dropout_offset);
  impl_->graph.launch(static_cast<cudaStream_t>(ctx.stream));
  ctx.dropout_offset = dropout_offset_after(last_published_, dropout_forwards_);
  for (std::size_t i = 0; i < counter_steps_.size(); ++i) *model_.counters()[i].value += counter_steps_[i];
  sgd_.set_steps(sgd_.steps() + 1);
}

std::size_t TrainingGraph::kernel_nodes() const { return impl_->graph.kernel_nodes(); }

#else  // no CUDA

struct TrainingGraph::Impl {};

TrainingGraph::TrainingGraph(layers::Model& model, optim::Sgd& sgd) : model_(model), sgd_(sgd) {
  ENGINE_FAIL("CUDA graphs need a CUDA device, and this build has none");
}
TrainingGraph::~TrainingGraph() = default;
StepDeviceRefs TrainingGraph::device_refs() const { return {}; }
void TrainingGraph::publish(const StepState&) {}
std::string TrainingGraph::capture(const std::function<void()>&) { return "no CUDA in this build"; }
bool TrainingGraph::captured() const { return false; }
void TrainingGraph::launch_captured() {}
void TrainingGraph::replay() {}
std::size_t TrainingGraph::kernel_nodes() const { return 0; }

#endif

}  // namespace engine::apps
