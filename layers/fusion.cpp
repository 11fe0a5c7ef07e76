#include "layers/fusion.h"

#include "layers/batchnorm2d.h"
#include "layers/conv2d.h"
#include "layers/graph.h"
#include "layers/relu.h"
#include "layers/residual.h"
#include "layers/sequential.h"

namespace engine::layers {
namespace {

// Fuses `first` -> `second` when they are a BatchNorm2d (local statistics) and a ReLU; 1 when it did.
int fuse_pair(Layer& first, Layer& second) {
  auto* bn = dynamic_cast<BatchNorm2d*>(&first);
  auto* relu = dynamic_cast<ReLU*>(&second);
  if (bn == nullptr || relu == nullptr || !bn->can_fuse_relu() || relu->fused_into() != nullptr) return 0;
  bn->set_fused_relu(true);
  relu->set_fused_into(bn);
  return 1;
}

// Folds `first` -> `second` when they are a Conv2d with a bias and a BatchNorm2d (local statistics).
int fold_pair(Layer& first, Layer& second) {
  auto* conv = dynamic_cast<Conv2d*>(&first);
  auto* bn = dynamic_cast<BatchNorm2d*>(&second);
  if (conv == nullptr || bn == nullptr || !conv->has_bias() || conv->bias_folded() || !bn->can_fuse_relu() ||
      bn->folded_conv() != nullptr) {
    return 0;
  }
  conv->set_bias_folded(true);
  bn->set_folded_conv(conv);
  return 1;
}

// Runs `on_pair` over every two layers under `root` where the second alone reads the first's output: the
// neighbours of each Sequential, of each Residual's main branch (a Residual lists its branch's layers as its
// own children, PyTorch's names), and each Graph's sole-consumer pairs (an imported model: a BatchNorm whose
// output also feeds a residual sum must keep that output unrectified, so it is left alone).
template <typename OnPair>
int for_each_pair(Layer& root, OnPair on_pair) {
  int count = 0;
  const auto chain = [&](const Sequential& s) {
    for (std::size_t i = 0; i + 1 < s.size(); ++i) count += on_pair(s.at(i), s.at(i + 1));
  };
  if (const auto* seq = dynamic_cast<const Sequential*>(&root)) chain(*seq);
  if (const auto* res = dynamic_cast<const Residual*>(&root)) chain(res->main_branch());
  if (auto* graph = dynamic_cast<Graph*>(&root)) {
    for (const auto& [first, second] : graph->sole_consumer_pairs()) count += on_pair(*first, *second);
  }
  for (const NamedChild& child : root.children()) count += for_each_pair(*child.layer, on_pair);
  return count;
}

}  // namespace

int fold_conv_bias_into_batchnorm(Layer& root) { return for_each_pair(root, fold_pair); }

int fuse_batchnorm_relu(Layer& root) { return for_each_pair(root, fuse_pair); }

}  // namespace engine::layers
