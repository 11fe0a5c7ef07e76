#pragma once
// The fusion pass Model::finalize runs (unless the model's fusion is switched off, Model::set_fusion): in
// every Sequential of the tree (and a Residual's main branch), a BatchNorm2d immediately followed by a ReLU
// is fused: the BatchNorm2d applies the ReLU in its own kernels (forward and backward,
// kernels/ops/batchnorm2d.h) and the ReLU becomes a pass-through. Parameters, buffers and state-dict names
// are untouched (ReLU has none). A BatchNorm2d whose statistics step is not local (SyncBatchNorm2d) is left
// unfused.

#include "layers/layer.h"

namespace engine::layers {

// Fuses every BatchNorm2d -> ReLU pair under `root`; returns how many it fused.
int fuse_batchnorm_relu(Layer& root);

}  // namespace engine::layers
