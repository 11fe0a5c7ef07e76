#pragma once
// The fusion passes Model::finalize runs (unless the model's fusion is switched off, Model::set_fusion): in
// every Sequential of the tree (and a Residual's main branch), a BatchNorm2d immediately followed by a ReLU,
// and in a Graph (an imported model) a BatchNorm2d whose output only a ReLU reads, is fused: the BatchNorm2d
// applies the ReLU in its own kernels (forward and backward, kernels/ops/batchnorm2d.h) and the ReLU becomes
// a pass-through. Parameters, buffers and state-dict names are untouched (ReLU has none). A BatchNorm2d whose
// statistics step is not local (SyncBatchNorm2d) is left unfused.

#include "layers/layer.h"

namespace engine::layers {

// Fuses every BatchNorm2d -> ReLU pair under `root`; returns how many it fused.
int fuse_batchnorm_relu(Layer& root);

// Folds the bias of every Conv2d (with a bias) immediately followed by a BatchNorm2d with local statistics
// into that BatchNorm2d (Conv2d::set_bias_folded, BatchNorm2d::set_folded_conv): in training mode the conv
// adds no bias and computes no bias gradient (it is exactly 0), and the BatchNorm adds the bias to its
// running mean inside its statistics kernel: two kernels fewer per pair and step on a GPU (bias add, bias
// reduction). Same parameters and state dict; eval adds the bias as before. Returns how many it folded.
// Model::finalize runs it for float32 models only: float64 runs the reference's plain composition, the
// oracle the folded float32 model is tested against.
int fold_conv_bias_into_batchnorm(Layer& root);

}  // namespace engine::layers
