// --plot FILE.png (apps/train/observers.h): the run's curves redrawn after every epoch, a resumed run's
// earlier epochs included (apps/train/training_plot.h); a failure is a warning, never the run's end.

#include <string>

#include <fmt/format.h>

#include "apps/train/gnuplot.h"
#include "apps/train/observers.h"
#include "apps/train/train_config.h"
#include "apps/train/trainer.h"
#include "apps/train/training_plot.h"
#include "core/error.h"

namespace engine::apps {

namespace {

class PlotObserver final : public RunObserver {
 public:
  PlotObserver(const Trainer& trainer, std::string png_path)
      : trainer_(trainer),
        png_path_(std::move(png_path)),
        title_(fmt::format("{} on {}", trainer.model().name(), trainer.config().dataset)) {}

  void epoch_end(const EpochEnd& /*e*/) override {
    plot_or_warn(trainer_.whole_history(), png_path_, title_);
  }

 private:
  const Trainer& trainer_;
  std::string png_path_, title_;
};

}  // namespace

std::unique_ptr<RunObserver> make_plot_observer(const Trainer& trainer, const std::string& png_path) {
  ENGINE_CHECK(!find_gnuplot().empty(), "--plot {}: gnuplot is not installed (Debian package gnuplot-nox)",
               png_path);
  return std::make_unique<PlotObserver>(trainer, png_path);
}

}  // namespace engine::apps
