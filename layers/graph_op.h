#pragma once
// GraphOp: a node of a Graph (layers/graph.h) with several inputs or several outputs and no parameters:
// Concat and Split on channels, and the broadcasting Add, Sub, Mul, Div of two activations
// (layers/graph_ops.h). A Layer takes one tensor; these take a list, so they are not Layers, and the Graph
// runs them with its own ExecutionContext. Their backward, like a Layer's, is hand-written.

#include <string>
#include <string_view>
#include <vector>

#include "core/tensor.h"
#include "layers/execution_context.h"
#include "layers/layer.h"

namespace engine::layers {

class GraphOp {
 public:
  virtual ~GraphOp() = default;
  virtual std::string_view kind() const = 0;
  virtual int num_outputs() const { return 1; }
  // The output shapes for these input shapes; throws engine::Error saying why they do not fit.
  virtual std::vector<Shape> output_shapes(const std::vector<Shape>& inputs) const = 0;
  // Keeps what backward needs when keeps_for_backward(mode).
  virtual std::vector<Tensor> forward(const ExecutionContext& ctx, const std::vector<Tensor>& x,
                                      Mode mode) = 0;
  // dy: one per output, undefined for an output nothing read (a zero gradient). need[i]: whether dL/dx_i is
  // wanted; the result has one tensor per input, undefined where it is not.
  virtual std::vector<Tensor> backward(const ExecutionContext& ctx, const std::vector<Tensor>& dy,
                                       const std::vector<bool>& need) = 0;

 protected:
  // An activation on the context's device, in its layout when 4-d (a blocked one only where the channels
  // fill its blocks: core/layout.h's activation_layout, as Layer::new_tensor).
  static Tensor new_activation(const ExecutionContext& ctx, const Shape& shape, DType dtype) {
    return Tensor::empty(
        shape, dtype, ctx.device, ctx.stream,
        shape.size() == 4 ? activation_layout(ctx.layout, shape[1], shape[2] * shape[3]) : Layout::NCHW);
  }
};

}  // namespace engine::layers
