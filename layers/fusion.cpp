#include "layers/fusion.h"

#include "layers/batchnorm2d.h"
#include "layers/conv2d.h"
#include "layers/relu.h"
#include "layers/residual.h"
#include "layers/sequential.h"

namespace engine::layers {
namespace {

// The pairs of one chain of layers that run one after the other.
int fuse_chain(const Sequential& chain) {
  int fused = 0;
  for (std::size_t i = 0; i + 1 < chain.size(); ++i) {
    auto* bn = dynamic_cast<BatchNorm2d*>(&chain.at(i));
    auto* relu = dynamic_cast<ReLU*>(&chain.at(i + 1));
    if (bn == nullptr || relu == nullptr || !bn->can_fuse_relu() || relu->fused_into() != nullptr) continue;
    bn->set_fused_relu(true);
    relu->set_fused_into(bn);
    ++fused;
  }
  return fused;
}

int fold_chain(const Sequential& chain) {
  int folded = 0;
  for (std::size_t i = 0; i + 1 < chain.size(); ++i) {
    auto* conv = dynamic_cast<Conv2d*>(&chain.at(i));
    auto* bn = dynamic_cast<BatchNorm2d*>(&chain.at(i + 1));
    if (conv == nullptr || bn == nullptr || !conv->has_bias() || conv->bias_folded() ||
        !bn->can_fuse_relu() || bn->folded_conv() != nullptr) {
      continue;
    }
    conv->set_bias_folded(true);
    bn->set_folded_conv(conv);
    ++folded;
  }
  return folded;
}

// Runs `on_chain` over every chain of layers under `root` that runs in order: each Sequential, and each
// Residual's main branch (a Residual lists its branch's layers as its own children, PyTorch's names).
template <typename OnChain>
int for_each_chain(Layer& root, OnChain on_chain) {
  int count = 0;
  if (const auto* seq = dynamic_cast<const Sequential*>(&root)) count += on_chain(*seq);
  if (const auto* res = dynamic_cast<const Residual*>(&root)) count += on_chain(res->main_branch());
  for (const NamedChild& child : root.children()) count += for_each_chain(*child.layer, on_chain);
  return count;
}

}  // namespace

int fold_conv_bias_into_batchnorm(Layer& root) { return for_each_chain(root, fold_chain); }

int fuse_batchnorm_relu(Layer& root) { return for_each_chain(root, fuse_chain); }

}  // namespace engine::layers
