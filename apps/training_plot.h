#pragma once
// --plot: the loss and accuracy curves of a run, per epoch, as a PNG drawn by gnuplot (Debian's gnuplot-nox),
// run as a subprocess on a generated script and data file. Two panels: train/test loss, train/test accuracy.

#include <string>
#include <vector>

#include "apps/epoch_log.h"

namespace engine::apps {

// The gnuplot executable on PATH, or "" when there is none.
std::string find_gnuplot();

// Writes `png_path`. Throws engine::Error when gnuplot is missing (naming the Debian package), fails, or
// writes nothing.
void write_training_plot(const std::vector<EpochMetrics>& history, const std::string& png_path,
                         const std::string& title);

}  // namespace engine::apps
