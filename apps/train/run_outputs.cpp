// attach_outputs (apps/train/observers.h): a run's flags to its observers, in the order their outputs appear.

#include "apps/train/observers.h"
#include "apps/train/train_config.h"
#include "apps/train/trainer.h"

namespace engine::apps {

void attach_outputs(Trainer& trainer) {
  const TrainConfig& c = trainer.config();
  const bool main = c.is_main();
  const bool training = c.eval_only.empty();
  // The trace first: its step span closes before any other observer of the step's end works.
  if (training && !c.trace.empty()) trainer.attach(make_trace_observer(trainer, main));
  if (main && training) trainer.attach(make_progress_bar_observer());
  if (main || c.log_all_ranks) trainer.attach(make_epoch_log_observer(trainer, !main));
  if (main && training && !c.metrics.empty()) trainer.attach(make_metrics_observer(c.metrics));
  if (training && !c.checkpoint_dir.empty()) trainer.attach(make_checkpoint_observer(trainer));
  if (main && training && !c.plot.empty()) trainer.attach(make_plot_observer(trainer, c.plot));
  if (main && training && !c.tensorboard.empty()) trainer.attach(make_tensorboard_observer(trainer));
  if (main && (!c.confusion.empty() || !c.misclassified.empty()))
    trainer.attach(make_pictures_observer(trainer));
}

}  // namespace engine::apps
