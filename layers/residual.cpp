#include "layers/residual.h"

#include "kernels/ops/residual_add.h"

namespace engine::layers {

Residual::Residual(std::unique_ptr<Sequential> main, std::unique_ptr<Sequential> shortcut,
                   std::string shortcut_name)
    : main_(std::move(main)),
      shortcut_(std::move(shortcut)),
      shortcut_name_(std::move(shortcut_name)),
      relu_(std::make_unique<ReLU>()) {
  LAYER_CHECK(main_ != nullptr && main_->size() > 0, "needs a non-empty main branch");
  if (!shortcut_) shortcut_ = std::make_unique<Sequential>();
  for (const NamedChild& c : main_->children()) {
    LAYER_CHECK(c.name != shortcut_name_ && c.name != "relu", "a main-branch child may not be named '{}'",
                c.name);
  }
  on_needs_input_grad_changed();
}

std::vector<NamedChild> Residual::children() const {
  std::vector<NamedChild> out = main_->children();
  out.push_back({shortcut_name_, shortcut_.get()});
  out.push_back({"relu", relu_.get()});
  return out;
}

void Residual::on_needs_input_grad_changed() {
  main_->set_needs_input_grad(needs_input_grad());
  shortcut_->set_needs_input_grad(needs_input_grad());
}

Shape Residual::output_shape_impl(const Shape& in) const {
  Shape a = main_->output_shape(in);  // not const: returned, so moved
  const Shape b = shortcut_->output_shape(in);
  LAYER_CHECK(a == b, "the main branch gives {} and the shortcut {} for an input {}: they cannot be added",
              shape_str(a), shape_str(b), shape_str(in));
  return a;
}

// Under bf16 autocast both branches are bf16 (conv, BatchNorm or ReLU outputs) and so is the sum; mixed
// bf16 + float32 gives float32, PyTorch's type promotion.
Tensor Residual::add(const Tensor& a, const Tensor& b) const {
  Tensor y = new_tensor(a.shape(), a.dtype() == b.dtype() ? a.dtype() : context().dtype);
  ops::residual_add(context(), a, b, y);
  return y;
}

// The main branch's children are run one by one, not through main_->forward: they are the block's own
// children (bound and named by the model), the Sequential holding them is not.
Tensor Residual::forward_impl(const Tensor& x, Mode mode) {
  Tensor a = x;
  for (const NamedChild& c : main_->children()) a = c.layer->forward(a, mode);
  const Tensor b = shortcut_->forward(x, mode);
  return relu_->forward(add(a, b), mode);
}

Tensor Residual::backward_impl(const Tensor& dy, Mode) {
  const Tensor ds = relu_->backward(dy);
  const Tensor dx_shortcut = shortcut_->backward(ds);
  const std::vector<NamedChild> main_children = main_->children();
  Tensor dx_main = ds;
  for (std::size_t i = main_children.size(); i-- > 0;) dx_main = main_children[i].layer->backward(dx_main);
  if (!needs_input_grad()) return Tensor();
  return add(dx_main, dx_shortcut);
}

}  // namespace engine::layers
