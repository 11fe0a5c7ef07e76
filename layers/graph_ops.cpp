#include "layers/graph_ops.h"

#include "core/error.h"
#include "kernels/ops/binary.h"
#include "kernels/ops/channel_copy.h"

namespace engine::layers {

namespace {

// Shapes equal but for the channel axis (1), of rank 2 or more.
void check_channel_compatible(const char* op, const Shape& a, const Shape& b) {
  bool ok = a.size() == b.size() && a.size() >= 2;
  for (std::size_t i = 0; ok && i < a.size(); ++i) ok = i == 1 || a[i] == b[i];
  ENGINE_CHECK(ok, "{}: inputs {} and {} differ beyond the channel axis 1", op, shape_str(a), shape_str(b));
}

DType common_dtype(const ExecutionContext& ctx, const std::vector<Tensor>& x) {
  for (const Tensor& t : x) {
    if (t.dtype() != x[0].dtype()) return ctx.dtype;
  }
  return x[0].dtype();
}

}  // namespace

std::vector<Shape> Concat::output_shapes(const std::vector<Shape>& inputs) const {
  ENGINE_CHECK(!inputs.empty(), "Concat: no inputs");
  Shape y = inputs[0];
  ENGINE_CHECK(y.size() >= 2, "Concat: input {} has no channel axis", shape_str(y));
  for (std::size_t i = 1; i < inputs.size(); ++i) {
    check_channel_compatible("Concat", inputs[0], inputs[i]);
    y[1] += inputs[i][1];
  }
  return {y};
}

std::vector<Tensor> Concat::forward(const ExecutionContext& ctx, const std::vector<Tensor>& x, Mode) {
  std::vector<Shape> shapes;
  input_dtypes_.clear();
  for (const Tensor& t : x) {
    shapes.push_back(t.shape());
    input_dtypes_.push_back(t.dtype());
  }
  Tensor y = new_activation(ctx, output_shapes(shapes)[0], common_dtype(ctx, x));
  std::int64_t offset = 0;
  for (const Tensor& t : x) {
    // A mixed list under bf16 autocast gives float32, as PyTorch promotes (the op widens a bf16 input).
    ops::copy_into_channels(ctx, t, y, offset);
    offset += t.shape()[1];
  }
  input_shapes_ = std::move(shapes);
  return {y};
}

std::vector<Tensor> Concat::backward(const ExecutionContext& ctx, const std::vector<Tensor>& dy,
                                     const std::vector<bool>& need) {
  std::vector<Tensor> dx(input_shapes_.size());
  std::int64_t offset = 0;
  for (std::size_t i = 0; i < input_shapes_.size(); ++i) {
    if (need[i]) {
      dx[i] = new_activation(ctx, input_shapes_[i], dy[0].dtype());
      ops::copy_from_channels(ctx, dy[0], offset, dx[i]);
    }
    offset += input_shapes_[i][1];
  }
  return dx;
}

Split::Split(std::vector<std::int64_t> sizes) : sizes_(std::move(sizes)) {
  ENGINE_CHECK(!sizes_.empty(), "Split: no outputs");
  for (const std::int64_t s : sizes_) ENGINE_CHECK(s > 0, "Split: an output of {} channels", s);
}

std::vector<Shape> Split::output_shapes(const std::vector<Shape>& inputs) const {
  ENGINE_CHECK(inputs.size() == 1 && inputs[0].size() >= 2, "Split: one input [N, C, ...] expected");
  std::int64_t total = 0;
  for (const std::int64_t s : sizes_) total += s;
  ENGINE_CHECK(total == inputs[0][1], "Split: outputs of {} channels in all from an input {}", total,
               shape_str(inputs[0]));
  std::vector<Shape> out;
  for (const std::int64_t s : sizes_) {
    out.push_back(inputs[0]);
    out.back()[1] = s;
  }
  return out;
}

std::vector<Tensor> Split::forward(const ExecutionContext& ctx, const std::vector<Tensor>& x, Mode) {
  const std::vector<Shape> shapes = output_shapes({x[0].shape()});
  std::vector<Tensor> y;
  std::int64_t offset = 0;
  for (const Shape& s : shapes) {
    y.push_back(new_activation(ctx, s, x[0].dtype()));
    ops::copy_from_channels(ctx, x[0], offset, y.back());
    offset += s[1];
  }
  input_shape_ = x[0].shape();
  input_dtype_ = x[0].dtype();
  return y;
}

std::vector<Tensor> Split::backward(const ExecutionContext& ctx, const std::vector<Tensor>& dy,
                                    const std::vector<bool>& need) {
  if (!need[0]) return {Tensor()};
  DType dtype = input_dtype_;
  for (const Tensor& g : dy) {
    if (g.defined()) dtype = g.dtype();
  }
  Tensor dx = new_activation(ctx, input_shape_, dtype);
  bool all = true;
  for (const Tensor& g : dy) all = all && g.defined();
  if (!all) dx.fill_bytes(0, ctx.stream);  // the outputs nothing read have a zero gradient
  std::int64_t offset = 0;
  for (std::size_t i = 0; i < sizes_.size(); ++i) {
    if (dy[i].defined()) ops::copy_into_channels(ctx, dy[i], dx, offset);
    offset += sizes_[i];
  }
  return {dx};
}

std::string_view Binary::kind() const {
  switch (op_) {
    case BinaryOp::Add: return "Add";
    case BinaryOp::Sub: return "Sub";
    case BinaryOp::Mul: return "Mul";
    default: return "Div";
  }
}

std::vector<Shape> Binary::output_shapes(const std::vector<Shape>& inputs) const {
  ENGINE_CHECK(inputs.size() == 2, "{}: two inputs expected, got {}", kind(), inputs.size());
  return {ops::broadcast_shape(std::string(kind()), inputs[0], inputs[1])};
}

std::vector<Tensor> Binary::forward(const ExecutionContext& ctx, const std::vector<Tensor>& x, Mode mode) {
  Tensor y = new_activation(ctx, output_shapes({x[0].shape(), x[1].shape()})[0], common_dtype(ctx, x));
  ops::binary_forward(ctx, op_, x[0], x[1], y);
  if (keeps_for_backward(mode)) {
    a_ = x[0];
    b_ = x[1];
  } else {
    a_ = Tensor();
    b_ = Tensor();
  }
  return {y};
}

std::vector<Tensor> Binary::backward(const ExecutionContext& ctx, const std::vector<Tensor>& dy,
                                     const std::vector<bool>& need) {
  ENGINE_CHECK(a_.defined(), "{}: backward without a training forward", kind());
  std::vector<Tensor> dx(2);
  if (need[0]) dx[0] = new_activation(ctx, a_.shape(), a_.dtype());
  if (need[1]) dx[1] = new_activation(ctx, b_.shape(), b_.dtype());
  ops::binary_backward(ctx, op_, dy[0], a_, b_, dx[0], dx[1]);
  return dx;
}

}  // namespace engine::layers
