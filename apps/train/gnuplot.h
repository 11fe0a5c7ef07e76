#pragma once
// Drawing a PNG with gnuplot (Debian's gnuplot-nox), run as a subprocess on a generated script and data file:
// the curves of --plot (apps/train/training_plot.h) and the timeline of --trace (apps/train/trace_plot.h).

#include <functional>
#include <string>

namespace engine::apps {

// The gnuplot executable on PATH, or "" when there is none.
std::string find_gnuplot();

// Writes `png_path`: `data` goes to a temporary file, `script(data_path, image_path)` is the gnuplot script
// that reads it and draws into a temporary image beside `png_path`, which is renamed over it only when
// gnuplot succeeded, so a failure never replaces a good image with a blank one. Throws engine::Error naming
// `flag` and `png_path` when gnuplot is missing (naming the Debian package), fails, or writes nothing.
void draw_with_gnuplot(
    const std::string& flag, const std::string& png_path, const std::string& data,
    const std::function<std::string(const std::string& data_path, const std::string& image_path)>& script);

// gnuplot's single-quoted string: a quote inside is doubled.
std::string gnuplot_quoted(const std::string& s);

}  // namespace engine::apps
