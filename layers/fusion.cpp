#include "layers/fusion.h"

#include "layers/batchnorm2d.h"
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

}  // namespace

int fuse_batchnorm_relu(Layer& root) {
  int fused = 0;
  if (const auto* seq = dynamic_cast<const Sequential*>(&root)) fused += fuse_chain(*seq);
  // A Residual runs its main branch's layers in order, but lists them as its own children (PyTorch's
  // names), so the chain is its main branch.
  if (const auto* res = dynamic_cast<const Residual*>(&root)) fused += fuse_chain(res->main_branch());
  for (const NamedChild& child : root.children()) fused += fuse_batchnorm_relu(*child.layer);
  return fused;
}

}  // namespace engine::layers
