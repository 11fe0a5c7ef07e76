#include "apps/train/run_observer.h"

namespace engine::apps {

void RunObservers::run_start(const RunStart& e) {
  for (const auto& o : list_) o->run_start(e);
}
void RunObservers::epoch_start(const EpochStart& e) {
  for (const auto& o : list_) o->epoch_start(e);
}
void RunObservers::step_begin(const StepBegin& e) {
  for (const auto& o : list_) o->step_begin(e);
}
void RunObservers::step_end(const StepEnd& e) {
  for (const auto& o : list_) o->step_end(e);
}
void RunObservers::epoch_trained(const EpochTrained& e) {
  for (const auto& o : list_) o->epoch_trained(e);
}
void RunObservers::evaluation_end(const EvaluationEnd& e) {
  for (const auto& o : list_) o->evaluation_end(e);
}
void RunObservers::epoch_end(const EpochEnd& e) {
  for (const auto& o : list_) o->epoch_end(e);
}
void RunObservers::checkpoint_written(const CheckpointWritten& e) {
  for (const auto& o : list_) o->checkpoint_written(e);
}
void RunObservers::stop_requested(const StopEvent& e) {
  for (const auto& o : list_) o->stop_requested(e);
}
void RunObservers::run_end(const RunEnd& e) {
  for (const auto& o : list_) o->run_end(e);
}

}  // namespace engine::apps
