#pragma once
// Residual: the ResNet basic block's wiring, y = relu(main(x) + shortcut(x)).
//
//   main      a Sequential (conv1, bn1, relu1, conv2, bn2 in ResNet). Its children are named as children of
//             the block itself, as in PyTorch's BasicBlock, whose conv1/bn1/conv2/bn2 are attributes of the
//             block: "layer1.0.conv1.weight", not "layer1.0.main.conv1.weight".
//   shortcut  a Sequential named "shortcut" (kuangliu's; torchvision's BasicBlock calls it "downsample"):
//             empty for the identity, or (1x1 Conv2d, BatchNorm2d) when the shape changes:
//             "layer2.0.shortcut.0.weight", "layer2.0.shortcut.1.running_mean".
//   relu      the ReLU after the add (F.relu in PyTorch; no state).
//
// Backward: dy -> relu -> ds, which both branches receive; the shortcut runs first (its parameters were
// registered last, so the grad-ready hook keeps firing from the last parameter to the first), then the main
// branch; dx = dx_main + dx_shortcut (dx_shortcut = ds for the identity). The add uses the residual_add op.

#include <memory>
#include <string>

#include "layers/relu.h"
#include "layers/sequential.h"

namespace engine::layers {

class Residual final : public Layer {
 public:
  // shortcut may be null: the identity. shortcut_name: its name among the block's children.
  Residual(std::unique_ptr<Sequential> main, std::unique_ptr<Sequential> shortcut,
           std::string shortcut_name = "shortcut");

  std::string_view kind() const override { return "Residual"; }
  Sequential& main_branch() const { return *main_; }
  Sequential& shortcut() const { return *shortcut_; }
  bool identity_shortcut() const { return shortcut_->size() == 0; }
  std::vector<NamedChild> children() const override;

 protected:
  Tensor forward_impl(const Tensor& x, Mode mode) override;
  Tensor backward_impl(const Tensor& dy, Mode mode) override;
  Shape output_shape_impl(const Shape& input_shape) const override;
  void on_needs_input_grad_changed() override;

 private:
  // a + b on the context's device (kernels' residual_add).
  Tensor add(const Tensor& a, const Tensor& b) const;

  std::unique_ptr<Sequential> main_;
  std::unique_ptr<Sequential> shortcut_;
  std::string shortcut_name_;
  std::unique_ptr<ReLU> relu_;
};

}  // namespace engine::layers
