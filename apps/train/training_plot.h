#pragma once
// --plot: the loss and accuracy curves of a run, per epoch, as a PNG drawn by gnuplot (Debian's gnuplot-nox),
// run as a subprocess on a generated script and data file. Two panels: train/test loss, train/test accuracy.
// A resumed run draws its whole history: the earlier epochs come back from the checkpoint's metadata
// (apps/train/epoch_log.h, format_history_json).

#include <string>
#include <vector>

#include "apps/train/epoch_log.h"

namespace engine::apps {

// Writes `png_path`: gnuplot draws into a temporary file beside it, which is renamed over `png_path` only
// when gnuplot succeeded, so a failure never replaces a good image with a blank one. Throws engine::Error
// when gnuplot is missing (naming the Debian package), fails, or writes nothing.
void write_training_plot(const std::vector<EpochMetrics>& history, const std::string& png_path,
                         const std::string& title);

// write_training_plot for a running training: a failure is one warning line on stderr, never an exception
// (a plot is a view of the run; it must not end it). Returns whether the image was written.
bool plot_or_warn(const std::vector<EpochMetrics>& history, const std::string& png_path,
                  const std::string& title);

}  // namespace engine::apps
