#pragma once
// The GraphOps (layers/graph_op.h) of the ONNX importer's graphs:
//   Concat    [N, C_i, ...] along the channel axis (PyTorch's torch.cat(dim=1): SqueezeNet's fire modules,
//             DenseNet, GoogLeNet's inception, ShuffleNet's stride-2 units); backward splits dy.
//   Split     [N, C, ...] into channel ranges of given sizes (torch.chunk / split on dim 1: ShuffleNet);
//             backward concatenates dy (zeros for an output nothing read).
//   Binary    a op b for Add, Sub, Mul, Div with numpy broadcasting (squeeze-excite's [N, C, 1, 1] times
//             [N, C, H, W], a scalar); each gradient summed over the axes its operand was stretched along.

#include <vector>

#include "kernels/broadcast.h"
#include "layers/graph_op.h"

namespace engine::layers {

class Concat final : public GraphOp {
 public:
  std::string_view kind() const override { return "Concat"; }
  std::vector<Shape> output_shapes(const std::vector<Shape>& inputs) const override;
  std::vector<Tensor> forward(const ExecutionContext& ctx, const std::vector<Tensor>& x, Mode mode) override;
  std::vector<Tensor> backward(const ExecutionContext& ctx, const std::vector<Tensor>& dy,
                               const std::vector<bool>& need) override;

 private:
  std::vector<Shape> input_shapes_;
  std::vector<DType> input_dtypes_;
};

class Split final : public GraphOp {
 public:
  explicit Split(std::vector<std::int64_t> sizes);
  std::string_view kind() const override { return "Split"; }
  int num_outputs() const override { return static_cast<int>(sizes_.size()); }
  const std::vector<std::int64_t>& sizes() const { return sizes_; }
  std::vector<Shape> output_shapes(const std::vector<Shape>& inputs) const override;
  std::vector<Tensor> forward(const ExecutionContext& ctx, const std::vector<Tensor>& x, Mode mode) override;
  std::vector<Tensor> backward(const ExecutionContext& ctx, const std::vector<Tensor>& dy,
                               const std::vector<bool>& need) override;

 private:
  std::vector<std::int64_t> sizes_;
  Shape input_shape_;
  DType input_dtype_ = DType::F32;
};

class Binary final : public GraphOp {
 public:
  explicit Binary(BinaryOp op) : op_(op) {}
  std::string_view kind() const override;
  BinaryOp op() const { return op_; }
  std::vector<Shape> output_shapes(const std::vector<Shape>& inputs) const override;
  std::vector<Tensor> forward(const ExecutionContext& ctx, const std::vector<Tensor>& x, Mode mode) override;
  std::vector<Tensor> backward(const ExecutionContext& ctx, const std::vector<Tensor>& dy,
                               const std::vector<bool>& need) override;

 private:
  BinaryOp op_;
  Tensor a_, b_;  // the operands, kept for backward
};

}  // namespace engine::layers
