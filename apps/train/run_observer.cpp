#include "apps/train/run_observer.h"

namespace engine::apps {

namespace {

// Calls `hook` of every observer in `list`, in order.
template <class Event>
void each(const std::vector<std::unique_ptr<RunObserver>>& list, void (RunObserver::*hook)(const Event&),
          const Event& e) {
  for (const auto& o : list) ((*o).*hook)(e);
}

}  // namespace

void RunObservers::run_start(const RunStart& e) { each(list_, &RunObserver::run_start, e); }
void RunObservers::epoch_start(const EpochStart& e) { each(list_, &RunObserver::epoch_start, e); }
void RunObservers::step_begin(const StepBegin& e) { each(list_, &RunObserver::step_begin, e); }
void RunObservers::step_end(const StepEnd& e) { each(list_, &RunObserver::step_end, e); }
void RunObservers::epoch_trained(const EpochTrained& e) { each(list_, &RunObserver::epoch_trained, e); }
void RunObservers::evaluation_end(const EvaluationEnd& e) { each(list_, &RunObserver::evaluation_end, e); }
void RunObservers::epoch_end(const EpochEnd& e) { each(list_, &RunObserver::epoch_end, e); }
void RunObservers::checkpoint_written(const CheckpointWritten& e) {
  each(list_, &RunObserver::checkpoint_written, e);
}
void RunObservers::stop_requested(const StopEvent& e) { each(list_, &RunObserver::stop_requested, e); }
void RunObservers::run_end(const RunEnd& e) { each(list_, &RunObserver::run_end, e); }

}  // namespace engine::apps
