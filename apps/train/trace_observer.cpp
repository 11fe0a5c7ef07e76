// --trace FILE.json (apps/train/observers.h, core/trace.h): --trace-steps steps from the run's second (the
// first allocates and plans), each in a "step" span; then the file and its picture FILE.png
// (apps/train/trace_plot.h). One trace per run.

#include <memory>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "apps/train/observers.h"
#include "apps/train/progress_bar.h"
#include "apps/train/trace_plot.h"
#include "apps/train/train_config.h"
#include "apps/train/trainer.h"
#include "core/trace.h"

namespace engine::apps {

namespace {

class TraceObserver final : public RunObserver {
 public:
  TraceObserver(const Trainer& trainer, bool writes)
      : trainer_(trainer), config_(trainer.config()), writes_(writes) {}

  void step_begin(const StepBegin& e) override {
    // The run's second step on, --trace-steps of them.
    if (run_batches_ < 1 || traced_steps_ >= config_.trace_steps) return;
    trace_begin();
    // Its gradient all-reduces on the communication track (a step that communicates: one that ends an
    // optimizer step), timed from the reducer's step start, where the step's span begins too.
    DataParallel* data_parallel = trainer_.data_parallel();
    traced_comm_ = data_parallel != nullptr && e.ends_step;
    std::optional<trace::Recorder::Clock::time_point> start;
    if (traced_comm_) start = data_parallel->trace_step_begin();
    step_span_ = trace_->begin_at(
        fmt::format("step {} (epoch {}, batch {})", e.optimizer_steps + 1, e.epoch + 1, e.batch + 1), "step",
        start.value_or(trace::Recorder::Clock::now()));
    traced_ = true;
  }

  void step_end(const StepEnd& e) override {
    ++run_batches_;
    if (traced_) {
      traced_ = false;
      trace_->end(step_span_);
      if (traced_comm_) trainer_.data_parallel()->trace_step_end(*trace_, step_span_);
      if (++traced_steps_ == config_.trace_steps) trace_end();
    }
    if (trace_ && e.steps == e.batches) trace_end();  // the epoch ended before --trace-steps: what was traced
  }

  void run_end(const RunEnd& /*e*/) override {
    if (!trace_) return;  // a run that failed while tracing: nothing written
    trace::set_active(nullptr);
    trace_.reset();
  }

 private:
  void trace_begin() {
    if (trace_) return;
    const TrainDevice& device = trainer_.device();
    const bool cuda = device.context().device.is_cuda();
    trace_ = std::make_unique<trace::Recorder>(cuda ? static_cast<cudaStream_t>(device.context().stream)
                                                    : nullptr);
    trace::set_active(trace_.get());
  }

  void trace_end() {
    trace::set_active(nullptr);
    if (trainer_.data_parallel()) trainer_.data_parallel()->trace_done();
    bool written = false;  // a trace that cannot be written is a warning: the run and its checkpoints go on
    if (writes_) {
      try {
        trace_->write_json(config_.trace, fmt::format("rank {}", config_.rank), config_.rank);
        written = true;
      } catch (const std::exception& e) {
        fmt::print(stderr, "cnn_train: warning: {}; training goes on without the trace\n", e.what());
      }
    }
    if (written) {
      print_log_line(
          fmt::format("cnn_train: wrote a trace of {} step(s) to {} (open it in ui.perfetto.dev or "
                      "chrome://tracing)",
                      traced_steps_, config_.trace));
      // The picture beside it (FILE.json -> FILE.png); without gnuplot a warning, the trace stands.
      const std::string png = config_.trace.substr(0, config_.trace.size() - 5) + ".png";
      try {
        write_trace_plot(trace_->spans(), png);
        print_log_line(fmt::format("cnn_train: drew the first traced step's timeline to {}", png));
      } catch (const std::exception& e) {
        fmt::print(stderr, "cnn_train: warning: {}; the trace itself was written\n", e.what());
      }
    }
    trace_.reset();
    traced_steps_ = config_.trace_steps;  // one trace per run
  }

  const Trainer& trainer_;
  const TrainConfig& config_;
  bool writes_;
  std::unique_ptr<trace::Recorder> trace_;  // while its steps run
  std::int64_t traced_steps_ = 0;
  std::int64_t run_batches_ = 0;               // batches this run has trained (the first is not traced)
  bool traced_ = false, traced_comm_ = false;  // the step in progress is traced; its all-reduces too
  std::size_t step_span_ = 0;
};

}  // namespace

std::unique_ptr<RunObserver> make_trace_observer(const Trainer& trainer, bool writes) {
  return std::make_unique<TraceObserver>(trainer, writes);
}

}  // namespace engine::apps
