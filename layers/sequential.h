#pragma once
// Sequential: PyTorch's nn.Sequential. Forward runs the children in order; backward runs them in reverse, so
// over a model the grad-ready hook fires from the last parameter to the first. Only the first child receives
// the container's needs_input_grad flag; every later child must produce dx for the one before it.
//
// Children are named by position ("0", "1", ...) like nn.Sequential, or explicitly ("conv1", "layer1") to
// mirror a PyTorch module with named attributes; the names are the state-dict path components. An empty
// Sequential is the identity (PyTorch's nn.Sequential() as an identity shortcut).

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "layers/layer.h"

namespace engine::layers {

class Sequential final : public Layer {
 public:
  Sequential() = default;

  // Appends `layer` under `name` ("" = its position). Names must be unique. Returns the layer.
  Layer& add(std::unique_ptr<Layer> layer, std::string name = "");
  template <typename L, typename... Args>
  L& emplace(Args&&... args) {
    return static_cast<L&>(add(std::make_unique<L>(std::forward<Args>(args)...)));
  }
  template <typename L, typename... Args>
  L& emplace_named(std::string name, Args&&... args) {
    std::unique_ptr<Layer> layer = std::make_unique<L>(std::forward<Args>(args)...);
    return static_cast<L&>(add(std::move(layer), std::move(name)));
  }

  std::string_view kind() const override { return "Sequential"; }
  std::size_t size() const { return layers_.size(); }
  Layer& at(std::size_t i) const { return *layers_.at(i).second; }
  std::vector<NamedChild> children() const override;

 protected:
  Tensor forward_impl(const Tensor& x, Mode mode) override;
  Tensor backward_impl(const Tensor& dy, Mode mode) override;
  Shape output_shape_impl(const Shape& input_shape) const override;
  void on_needs_input_grad_changed() override;

 private:
  std::vector<std::pair<std::string, std::unique_ptr<Layer>>> layers_;
};

}  // namespace engine::layers
