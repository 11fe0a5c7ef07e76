#pragma once
// The outputs of a training run, each an observer of it (apps/train/run_observer.h) in a file of its own, and
// attach_outputs, which attaches those a run's flags ask for. The Trainer knows none of them.
//
//   epoch_log_observer.cpp      the epoch lines; on rank 0 also "nothing to train", --eval-only's line and
//   the
//                               final "Test Acc: ..%"
//   progress_bar_observer.cpp   the progress bar of an epoch's steps (apps/train/progress_bar.h)
//   metrics_observer.cpp        --metrics FILE: one JSON object per epoch (apps/train/epoch_log.h)
//   plot_observer.cpp           --plot FILE.png after every epoch (apps/train/training_plot.h)
//   tensorboard_observer.cpp    --tensorboard DIR (apps/train/tensorboard_log.h)
//   trace_observer.cpp          --trace FILE.json and its FILE.png (core/trace.h, apps/train/trace_plot.h)
//   pictures_observer.cpp       --confusion, --misclassified at the run's end (apps/pictures/)
//   checkpoint_observer.cpp     the checkpoint policy: --save-every, --save-every-steps, --resume auto's
//   every
//                               epoch, the end, a stop; it calls Trainer::save_checkpoint()
//
// Rank 0's outputs are attached on rank 0 alone; the checkpoint policy (its mid-epoch saves are collectives)
// and the trace (every rank's reducer records its all-reduces while it runs) on every rank.

#include <memory>
#include <string>

#include "apps/train/run_observer.h"

namespace engine::apps {

class Trainer;

// Attaches to `trainer` the outputs its configuration asks for, on this rank. Throws engine::Error for an
// output that cannot be made (bad input: --plot without gnuplot, --tensorboard DIR not writable).
void attach_outputs(Trainer& trainer);

// `epoch_lines_only`: a rank other than 0 under --log-all-ranks.
std::unique_ptr<RunObserver> make_epoch_log_observer(const Trainer& trainer, bool epoch_lines_only);
std::unique_ptr<RunObserver> make_progress_bar_observer();
std::unique_ptr<RunObserver> make_metrics_observer(const std::string& path);
std::unique_ptr<RunObserver> make_plot_observer(const Trainer& trainer, const std::string& png_path);
std::unique_ptr<RunObserver> make_tensorboard_observer(const Trainer& trainer);
// `writes`: this rank writes the file (rank 0); every rank records, so that its reducer's timeline stops.
std::unique_ptr<RunObserver> make_trace_observer(const Trainer& trainer, bool writes);
std::unique_ptr<RunObserver> make_pictures_observer(Trainer& trainer);
std::unique_ptr<RunObserver> make_checkpoint_observer(Trainer& trainer);

}  // namespace engine::apps
