#pragma once
// A checkpoint given to a run must be one of that run: training continued (--resume FILE, --resume auto) on
// another dataset, or with another model or number of classes, is refused naming both sides, before any
// tensor is read. Every cnn_train checkpoint's metadata holds what is compared (dataset, model, class_names);
// a file without it (PyTorch's weights) is not checked here, and the load still checks every tensor's shape.
//
// --eval-only checks the model, the images' shape and the class count (a model may be evaluated on another
// dataset of its classes and images). Datasets compare by name; two folder:PATH datasets compare by their
// classes (the folder may have moved, or live at another path on another node), so a folder of other classes
// is refused whatever its path.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace engine::apps {

struct RunIdentity {
  std::string dataset;                               // --dataset
  std::string model;                                 // --model when given; "" takes the checkpoint's
  std::vector<std::string> class_names;              // the run's dataset's
  std::int64_t channels = 0, height = 0, width = 0;  // the run's images
  bool same_dataset =
      true;  // false for --eval-only: a model may be evaluated on another dataset of its classes
};

// Throws engine::Error naming `flag` (e.g. "--resume auto"), `path` and the first disagreement's two sides.
// Returns a note, or "": --eval-only of a checkpoint trained on another dataset runs, saying so (issue 44: a
// Fashion-MNIST checkpoint scored 13.60% on MNIST without a word).
std::string check_checkpoint_fits_run(const std::string& flag, const std::string& path,
                                      const std::map<std::string, std::string>& metadata,
                                      const RunIdentity& run);

}  // namespace engine::apps
