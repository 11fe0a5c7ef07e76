#pragma once
// Recipes: `--recipe NAME` sets a published trainer's hyperparameters at once; any flag given on the command
// line still wins (the program says which flags it was given: apps/train_flags.cpp asks CLI11's count()).
//
// airbench94 (KellerJordan/cifar10-airbench, airbench94.py, issue 18), translated to cnn_train's terms:
//   --model airbench --batch-size 1024 --epochs 10 --schedule triangle --schedule-unit step
//   (triangle 0.2 -> 1 at 23% -> 0.07) --momentum 0.85 --nesterov --label-smoothing 0.2
//   --augment flip-translate --translate 2 --tta 2 --whiten-init 5000
//   --ema-every 5 --ema-start-epoch 3 --ema-decay 0.95 --ema-decay-pow 3 --ema-mode lookahead
//   --param-group 0.weight:frozen (the whitening conv), norm1.weight:frozen, norm2.weight:frozen (BatchNorm's
//   scale stays 1), norm:lr=64,wd=WD/64 (BatchNorm biases: bias_scaler 64, weight decay not scaled)
//   --lr and --weight-decay: airbench's "decoupled" values, lr 11.5 and wd 0.0153 per 1024 examples with
//   Nesterov's step scale k = 1024 (1 + 1/(1 - momentum)), are for torch.optim.SGD on a SUMMED loss:
//   lr_torch = 11.5 / k, weight_decay_torch = 0.0153 B / 11.5 (its wd / lr). Our loss is the batch MEAN
//   (gradients 1/B of the sum); SGD with lr' = lr_torch B and weight_decay' = weight_decay_torch / B takes
//   the same steps (momentum buffers 1/B of torch's), so
//     lr = 11.5 B / k   (1.5 at B = 1024),   weight_decay = 0.0153 / 11.5,
//   with B = --batch-size x --accumulate: a smaller batch gets a proportionally smaller rate, as airbench's
//   summed loss would give. (With DDP the global batch is world x B: give --lr.)
// What differs from the file: --epochs is an integer (airbench trains 9.9 epochs: 476 steps of 48; here 10
// epochs), the last partial batch is trained (airbench drops it), and the whitening bias is trained for all
// epochs (airbench freezes it after 3).
//
// Refused on datasets other than cifar10 and folder:PATH (decoded to 32x32 RGB).

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "apps/train/train_config.h"

namespace engine::apps {

// Whether the command line gave `flag` ("--lr"): a recipe presets only the fields of flags not given.
using FlagGiven = std::function<bool(const char* flag)>;

// airbench94's learning rate for a batch of `batch` samples with a mean loss (see above).
double airbench94_lr(std::int64_t batch);
// airbench94's weight decay with a mean loss, and its BatchNorm-bias parameter-group rules.
double airbench94_weight_decay();
std::vector<std::string> airbench94_param_groups();

// Sets every field of `config` (its recipe, TrainConfig::recipe) covers whose flag was not `given`. Throws
// engine::Error when the dataset does not fit the recipe.
void apply_recipe(TrainConfig& config, const FlagGiven& given);

}  // namespace engine::apps
