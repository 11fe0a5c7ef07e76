#pragma once
// cnn_train --eval-only feeds the checkpoint's model what its evaluation fed it (issue 42): the evaluation
// transform the checkpoint records (apps/train/eval_transform.h) replaces --image-size and --resize's
// defaults, and its normalization replaces the statistics a folder dataset would compute from its training
// split. A checkpoint without them keeps the flags and the dataset's statistics.
//
// A flag given on the command line that disagrees with the checkpoint:
//  - --image-size: refused, naming both values (the model's input is the checkpoint's; a model that takes
//    any size would still be evaluated on crops it never saw the scale of, silently);
//  - --resize: the flag wins, with a note naming both (evaluating a model at another scale is an
//    experiment worth running, FixRes's).

#include <map>
#include <string>
#include <vector>

#include "apps/train/train_config.h"

namespace engine::apps {

struct EvalOnlyTransform {
  std::vector<float> mean, std;  // the checkpoint's normalization; empty: the dataset's statistics
  std::string note;              // printed by rank 0: a flag that replaced the checkpoint's value, or ""
};

// Adjusts `config` (--eval-only of `checkpoint`, whose metadata is `metadata`) as above. Throws
// engine::Error (bad input) for a conflicting --image-size or a malformed transform.
EvalOnlyTransform adopt_checkpoint_transform(TrainConfig& config, const std::string& checkpoint,
                                             const std::map<std::string, std::string>& metadata);

}  // namespace engine::apps
