#include "apps/train/training_graph.h"

#include <cstddef>
#include <exception>
#include <utility>

#include "core/error.h"

#if ENGINE_HAVE_CUDA
#include "apps/train/step_state_buffer.h"
#include "core/caching_allocator.h"
#include "core/cuda_check.h"
#include "core/cuda_graph.h"
#endif

namespace engine::apps {

HostStepMark mark_host_state(const layers::Model& model, const optim::Sgd& sgd) {
  HostStepMark m;
  m.dropout_offset = model.context().dropout_offset;
  for (const layers::Counter& c : model.counters()) m.counters.push_back(*c.value);
  m.optimizer_steps = sgd.steps();
  return m;
}

HostStepAdvance host_advance(const HostStepMark& before, const HostStepMark& after) {
  ENGINE_CHECK(before.counters.size() == after.counters.size(),
               "host step advance: {} counters before, {} after", before.counters.size(),
               after.counters.size());
  ENGINE_CHECK(
      after.dropout_offset >= before.dropout_offset && after.optimizer_steps >= before.optimizer_steps,
      "host step advance: the dropout offset ({} -> {}) or the step count ({} -> {}) went back",
      before.dropout_offset, after.dropout_offset, before.optimizer_steps, after.optimizer_steps);
  HostStepAdvance a;
  a.dropout_forwards = after.dropout_offset - before.dropout_offset;
  a.optimizer_steps = after.optimizer_steps - before.optimizer_steps;
  for (std::size_t i = 0; i < before.counters.size(); ++i) {
    ENGINE_CHECK(after.counters[i] >= before.counters[i], "host step advance: counter {} went from {} to {}",
                 i, before.counters[i], after.counters[i]);
    a.counters.push_back(after.counters[i] - before.counters[i]);
  }
  return a;
}

void restore_host_state(const HostStepMark& mark, layers::Model& model, optim::Sgd& sgd) {
  const auto& counters = model.counters();
  ENGINE_CHECK(mark.counters.size() == counters.size(),
               "host step restore: {} counters marked, the model has {}", mark.counters.size(),
               counters.size());
  model.context().dropout_offset = mark.dropout_offset;
  for (std::size_t i = 0; i < counters.size(); ++i) *counters[i].value = mark.counters[i];
  sgd.set_steps(mark.optimizer_steps);
}

void apply_host_advance(const HostStepAdvance& advance, layers::Model& model, optim::Sgd& sgd) {
  const auto& counters = model.counters();
  ENGINE_CHECK(advance.counters.size() == counters.size(),
               "host step advance: {} counters measured, the model has {}", advance.counters.size(),
               counters.size());
  model.context().dropout_offset += advance.dropout_forwards;
  for (std::size_t i = 0; i < counters.size(); ++i) *counters[i].value += advance.counters[i];
  sgd.set_steps(sgd.steps() + advance.optimizer_steps);
}

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
    } catch (const std::exception&) {  // NOLINT(bugprone-empty-catch): no throw from a destructor
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
  void* stream = model_.context().stream;
  // The host state at the step's start, to measure the step's advance (or restore it after a failure).
  const HostStepMark before = mark_host_state(model_, sgd_);
  if (impl_->pool == 0) impl_->pool = impl_->allocator.create_graph_pool();
  impl_->allocator.begin_graph_capture(stream, impl_->pool);
  std::string failed;
  try {
    failed = impl_->graph.capture(static_cast<cudaStream_t>(stream), step);
  } catch (...) {
    impl_->allocator.end_graph_capture(stream);
    throw;
  }
  impl_->allocator.end_graph_capture(stream);
  if (!failed.empty()) {
    // No graph uses the pool's memory: back to the shared cache (blocks in use when they are freed).
    impl_->allocator.release_graph_pool(impl_->pool);
    impl_->pool = 0;
    restore_host_state(before, model_, sgd_);
    return failed;
  }
  advance_ = host_advance(before, mark_host_state(model_, sgd_));
  ENGINE_CHECK(advance_.optimizer_steps == 1,
               "TrainingGraph: the captured step made {} optimizer steps, not one (a bug in the caller)",
               advance_.optimizer_steps);
  ENGINE_CHECK(last_published_.dropout_offset == before.dropout_offset,
               "TrainingGraph: the step state published {} as the dropout offset, the step began at {}",
               last_published_.dropout_offset, before.dropout_offset);
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
  apply_host_advance(advance_, model_, sgd_);
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
