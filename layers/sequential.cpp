#include "layers/sequential.h"

#include <fmt/format.h>

namespace engine::layers {

Layer& Sequential::add(std::unique_ptr<Layer> layer, std::string name) {
  LAYER_CHECK(layer != nullptr, "add(nullptr)");
  LAYER_CHECK(!finalized(), "cannot add a layer once the model is finalized");
  if (name.empty()) name = fmt::format("{}", layers_.size());
  for (const auto& [existing, _] : layers_) LAYER_CHECK(existing != name, "two children named '{}'", name);
  layer->set_needs_input_grad(layers_.empty() ? needs_input_grad() : true);
  layers_.emplace_back(std::move(name), std::move(layer));
  return *layers_.back().second;
}

std::vector<NamedChild> Sequential::children() const {
  std::vector<NamedChild> out;
  out.reserve(layers_.size());
  for (const auto& [name, layer] : layers_) out.push_back({name, layer.get()});
  return out;
}

void Sequential::on_needs_input_grad_changed() {
  if (!layers_.empty()) layers_.front().second->set_needs_input_grad(needs_input_grad());
}

Shape Sequential::output_shape_impl(const Shape& input_shape) const {
  Shape shape = input_shape;
  for (const auto& entry : layers_) shape = entry.second->output_shape(shape);
  return shape;
}

Tensor Sequential::forward_impl(const Tensor& x, Mode mode) {
  Tensor y = x;
  for (const auto& entry : layers_) y = entry.second->forward(y, mode);
  return y;
}

Tensor Sequential::backward_impl(const Tensor& dy, Mode) {
  Tensor g = dy;
  for (std::size_t i = layers_.size(); i-- > 0;) g = layers_[i].second->backward(g);
  // Empty: the identity, whose input gradient is dy itself.
  return needs_input_grad() ? g : Tensor();
}

}  // namespace engine::layers
