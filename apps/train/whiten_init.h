#pragma once
// --whiten-init N (airbench94's init_whitening_conv): the model's first Conv2d set to the patch-whitening
// filters (layers/patch_whitening.h) of the first N training images, normalized as training sees them.
// Every rank computes the same filters from the same images (float64 on the host), before DDP's parameter
// broadcast and before a --resume checkpoint is loaded (which then wins).

#include <cstdint>
#include <string>

#include "apps/train/train_data.h"
#include "layers/model.h"

namespace engine::apps {

// airbench94's eps: directions of patch variance well below it are damped instead of amplified.
inline constexpr double kWhitenEps = 5e-4;

// Sets the first Conv2d's weight (the bias is left as initialized) and returns a line for the log. Throws
// engine::Error naming --whiten-init when the model has no Conv2d, when its first one is not k x k, stride 1,
// with out = 2 * in*k*k channels and in = the images' channels, or when no training set is loaded. N larger
// than the training set uses all of it (a preset's 5000 on a --limit-train subset), and the line says so.
std::string apply_whiten_init(layers::Model& model, const TrainData& data, std::int64_t images);

}  // namespace engine::apps
