// cnn_predict: classifies image files with a checkpoint written by cnn_train, printing the top classes with
// their probabilities (softmax of the logits).
//
//   cnn_predict --checkpoint ckpt.safetensors [--top 3] [--classes a,b,c] IMAGE...
//
// The checkpoint's metadata says the model and the dataset; the image is decoded with stb_image to the
// model's input (channels and size: 1x28x28 for mnist_cnn, 3x32x32 otherwise), normalized as in training. An
// image that is not the model's input as it is (another size, colour for a grey model, transparency) is
// converted, and a note on stderr says what was converted ("cnn_predict: note: cat.png is 32x32 RGB; the
// model takes 28x28 grey: converted (resized, colour to grey)").
// Exit codes: 0 ok; 2 bad usage or input (a missing or corrupt checkpoint or image, named); 1 another
// failure.

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "apps/cli/cli_errors.h"
#include "apps/cli/number_range.h"
#include "apps/predict.h"
#include "core/error.h"

int main(int argc, char** argv) {
  std::string checkpoint;
  std::vector<std::string> images;
  std::string classes;
  int top = 3;
  CLI::App app{"cnn_predict: classify images with a cnn_train checkpoint"};
  app.add_option("--checkpoint", checkpoint, "a checkpoint written by cnn_train")->required();
  app.add_option("--top", top, "how many classes to print per image")
      ->check(engine::apps::number_range(1, 1000));
  app.add_option("--classes", classes,
                 "class names, comma-separated (default: from the checkpoint's dataset)");
  app.add_option("images", images, "image files (PNG, JPEG, BMP)")->required();
  engine::apps::add_verbose_flag(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return engine::apps::report_parse_error(app, e, "cnn_predict");
  }
  std::unique_ptr<engine::apps::Predictor> predictor;
  try {
    predictor = std::make_unique<engine::apps::Predictor>(checkpoint, classes);
  } catch (const std::exception& e) {
    fmt::print(stderr, "cnn_predict: {}\n", engine::apps::failure_text(e));
    return 2;
  }
  int rc = 0;
  for (const std::string& path : images) {
    try {
      std::string conversion;
      const std::vector<float> probs = predictor->classify(path, &conversion);
      // On stderr: stdout stays the predictions alone, for scripts that read them.
      if (!conversion.empty()) fmt::print(stderr, "cnn_predict: note: {}\n", conversion);
      std::vector<std::size_t> order(probs.size());
      std::iota(order.begin(), order.end(), 0);
      const std::size_t k = std::min(order.size(), static_cast<std::size_t>(top));
      std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), order.end(),
                        [&](std::size_t a, std::size_t b) { return probs[a] > probs[b]; });
      fmt::print("{}\n", path);
      for (std::size_t i = 0; i < k; ++i) {
        fmt::print("  {:6.2f}%  {}\n", 100.0 * static_cast<double>(probs[order[i]]),
                   predictor->class_name(order[i]));
      }
    } catch (const std::exception& e) {
      fmt::print(stderr, "cnn_predict: {}\n", engine::apps::failure_text(e));
      rc = 2;
    }
  }
  return rc;
}
