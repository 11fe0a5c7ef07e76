// --confusion FILE.png and --misclassified FILE.png (apps/train/observers.h), when the run ends: the test
// set's predictions with the final weights (Trainer::predict_test_set, one process), the heat map and the
// first misclassified images with their true and predicted classes (apps/pictures/); --metrics gets the
// matrix's numbers.

#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "apps/pictures/confusion_matrix.h"
#include "apps/pictures/data_grid.h"
#include "apps/train/observers.h"
#include "apps/train/progress_bar.h"
#include "apps/train/train_config.h"
#include "apps/train/trainer.h"
#include "core/error.h"
#include "data/image_codec.h"

namespace engine::apps {

namespace {

constexpr std::size_t kMostMisclassifiedShown = 64;

class PicturesObserver final : public RunObserver {
 public:
  explicit PicturesObserver(Trainer& trainer) : trainer_(trainer) {}

  void run_end(const RunEnd& e) override {
    if (e.completed) write_evaluation_pictures();
  }

 private:
  void write_evaluation_pictures() {
    const TrainConfig& c = trainer_.config();
    const data::Dataset& test = trainer_.data().test;
    ConfusionMatrix matrix(static_cast<int>(test.num_classes()));
    std::vector<std::int64_t> wrong;
    std::vector<std::string> captions;
    std::int64_t index = 0;
    for (const Trainer::Prediction& p : trainer_.predict_test_set()) {
      const int truth = p.truth, guess = p.guess;
      matrix.add(truth, guess);
      if (truth != guess && wrong.size() < kMostMisclassifiedShown) {
        wrong.push_back(index);
        captions.push_back(fmt::format("true: {}\npred: {}",
                                       test.class_names[static_cast<std::size_t>(truth)],
                                       test.class_names[static_cast<std::size_t>(guess)]));
      }
      ++index;
    }
    if (!c.confusion.empty()) {
      data::write_png(c.confusion, matrix.image(test.class_names));
      print_log_line(fmt::format("cnn_train: wrote the confusion matrix ({} of {} test samples right) to {}",
                                 matrix.correct(), matrix.total(), c.confusion));
    }
    if (!c.misclassified.empty()) {
      if (wrong.empty()) {
        print_log_line(fmt::format(
            "cnn_train: --misclassified {}: no test image is misclassified; nothing drawn", c.misclassified));
      } else {
        data::write_png(c.misclassified, make_captioned_grid(test, wrong, captions, 8));
        print_log_line(fmt::format("cnn_train: drew {} misclassified test image(s){} to {}", wrong.size(),
                                   wrong.size() == kMostMisclassifiedShown ? " (the first)" : "",
                                   c.misclassified));
      }
    }
    if (!c.metrics.empty()) {
      std::ofstream metrics(c.metrics, std::ios::app);
      metrics << "{\"confusion_matrix\": " << matrix.to_json(test.class_names) << "}\n";
      ENGINE_CHECK(metrics.good(), "--metrics '{}': cannot write the file", c.metrics);
    }
  }

  Trainer& trainer_;
};

}  // namespace

std::unique_ptr<RunObserver> make_pictures_observer(Trainer& trainer) {
  return std::make_unique<PicturesObserver>(trainer);
}

}  // namespace engine::apps
