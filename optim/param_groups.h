#pragma once
// Parameter groups from the command line: `--param-group SELECTOR:SETTINGS` (repeatable) turns into
// cpu::SgdGroup ranges of the model's flat parameter buffer (what optim::Sgd takes).
//
//   SELECTOR  Kind.leaf  a layer kind and a parameter's last name part: BatchNorm2d.bias is every
//                        BatchNorm2d's bias (airbench's higher rate for BatchNorm biases)
//             text       otherwise: every parameter whose state-dict name contains the text (features.0.)
//   SETTINGS  comma-separated: lr=X (a factor of the scheduled rate), wd=X (the group's weight decay,
//             default: --weight-decay), frozen (never updated: airbench's whitening conv weights),
//             epochs=N (updated during the first N epochs, frozen from epoch N on: airbench's whitening
//             bias, epochs=3)
//
// A parameter takes the first rule that selects it. Its range runs from its offset to the next parameter's
// (the alignment padding, zero in parameters and gradients, stays zero under any settings), and neighbours
// with equal settings merge, so the kernels see few ranges.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/cpu/sgd.h"
#include "layers/model.h"

namespace engine::optim {

struct ParamGroupRule {
  std::string selector;
  double lr_scale = 1.0;
  std::optional<double> weight_decay;
  bool frozen = false;
  std::optional<std::int64_t> epochs;  // frozen from this (0-based) epoch on
};

// "BatchNorm2d.bias:lr=64,wd=0" -> a rule. Throws engine::Error naming the text and the part that is wrong.
ParamGroupRule parse_param_group_rule(std::string_view text);

// The groups of a finalized model during (0-based) `epoch`. A rule that selects no parameter throws
// engine::Error naming it (a typo would otherwise silently train with the defaults).
std::vector<cpu::SgdGroup> param_groups_for(const layers::Model& model, std::span<const ParamGroupRule> rules,
                                            double default_weight_decay, std::int64_t epoch = 0);

// Whether the groups differ between epochs (some rule has epochs=N): then the trainer rebuilds them at the
// start of every epoch.
bool param_groups_change_with_epoch(std::span<const ParamGroupRule> rules);

}  // namespace engine::optim
