#pragma once
// cnn_train's batch size and learning rate per model of the zoo, for the flags left out: one setting does
// not train them all (cnn3 at lr 0.1 stays at chance, as in PyTorch, while resnet18 wants 0.1). The other
// optimizer defaults are every model's (SGD, momentum 0.9, weight decay 5e-4, constant rate); --recipe
// airbench94 sets its own. A flag given on the command line always wins.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace engine::apps {

struct ModelDefaults {
  std::string_view model;  // a name of layers::model_names()
  std::int64_t batch_size;
  double lr;
};

// One row per model of the zoo, in layers::model_names()'s order.
const std::vector<ModelDefaults>& model_defaults_table();

// The row of `model`; throws engine::Error naming the known ones when there is none.
const ModelDefaults& model_defaults(std::string_view model);

// --batch-size's and --lr's help: "128 for vgg6, 128 for cnn3, ..." (`field` picks the column).
std::string model_defaults_help(std::string (*field)(const ModelDefaults&));

}  // namespace engine::apps
