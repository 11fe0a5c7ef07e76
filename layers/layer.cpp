#include "layers/layer.h"

#include <optional>
#include <utility>

#include <fmt/format.h>

#include "core/trace.h"

namespace engine::layers {

std::string Layer::describe() const {
  if (path_.empty()) return std::string(kind());  // a model's root, or a layer in no model yet
  return fmt::format("{} '{}'", kind(), path_);
}

void Layer::set_needs_input_grad(bool needs) {
  needs_input_grad_ = needs;
  on_needs_input_grad_changed();
}

std::size_t Layer::add_parameter(std::string name, Shape shape, ParamInit init, std::int64_t fan_in) {
  ENGINE_CHECK(!context_, "{}: parameters are registered before the model is finalized", describe());
  ParamSlot slot;
  slot.name = std::move(name);
  slot.shape = std::move(shape);
  slot.init = init;
  slot.fan_in = fan_in;
  params_.push_back(std::move(slot));
  return params_.size() - 1;
}

std::size_t Layer::add_buffer(std::string name, Shape shape, double fill) {
  ENGINE_CHECK(!context_, "{}: buffers are registered before the model is finalized", describe());
  BufferSlot slot;
  slot.name = std::move(name);
  slot.shape = std::move(shape);
  slot.fill = fill;
  buffers_.push_back(std::move(slot));
  return buffers_.size() - 1;
}

void Layer::set_initial_values(std::string_view local_name, std::vector<double> values) {
  ENGINE_CHECK(!context_, "{}: initial values are set before the model is finalized", describe());
  auto fits = [&](const Shape& shape) {
    LAYER_CHECK(static_cast<std::int64_t>(values.size()) == shape_numel(shape),
                "'{}' has shape {}: {} initial values do not fit", local_name, shape_str(shape),
                values.size());
  };
  for (ParamSlot& slot : params_) {
    if (slot.name != local_name) continue;
    fits(slot.shape);
    slot.given = std::move(values);
    return;
  }
  for (BufferSlot& slot : buffers_) {
    if (slot.name != local_name) continue;
    fits(slot.shape);
    slot.given = std::move(values);
    return;
  }
  LAYER_CHECK(false, "has no parameter or buffer named '{}'", local_name);
}

std::size_t Layer::add_counter(std::string name) {
  ENGINE_CHECK(!context_, "{}: counters are registered before the model is finalized", describe());
  counters_.push_back(CounterSlot{std::move(name), 0});
  return counters_.size() - 1;
}

ExecutionContext& Layer::context() const {
  ENGINE_CHECK(context_ != nullptr, "{} is not part of a finalized model: call Model::finalize first",
               describe());
  return *context_;
}

Tensor Layer::new_tensor(const Shape& shape) const { return new_tensor(shape, context().dtype); }

DType Layer::autocast_output_dtype() const {
  const ExecutionContext& ctx = context();
  return ctx.autocast_bf16 ? DType::BF16 : ctx.dtype;
}

Tensor Layer::new_tensor(const Shape& shape, DType dtype) const {
  const ExecutionContext& ctx = context();
  return Tensor::empty(
      shape, dtype, ctx.device, ctx.stream,
      shape.size() == 4 ? activation_layout(ctx.layout, shape[1], shape[2] * shape[3]) : Layout::NCHW);
}

void Layer::bind(std::shared_ptr<ExecutionContext> context, std::shared_ptr<GradReadyHook> hook) {
  context_ = std::move(context);
  hook_ = std::move(hook);
}

void Layer::check_input(const Tensor& t, const char* what) const {
  const ExecutionContext& ctx = context();
  LAYER_CHECK(t.defined(), "{} is an undefined tensor", what);
  LAYER_CHECK(t.device() == ctx.device, "{} {} is not on the model's device {}", what, t.str(),
              ctx.device.str());
  LAYER_CHECK(t.dtype() == ctx.dtype || (ctx.autocast_bf16 && t.dtype() == DType::BF16),
              "{} {} is not of the model's dtype {}{}", what, t.str(), dtype_name(ctx.dtype),
              ctx.autocast_bf16 ? " (or bfloat16 under bf16 autocast)" : "");
  const Layout expected =
      t.ndim() == 4 ? activation_layout(ctx.layout, t.dim(1), t.dim(2) * t.dim(3)) : Layout::NCHW;
  LAYER_CHECK(t.layout() == expected, "{} {} is in the {} layout, the model's 4-d tensors are {}", what,
              t.str(), layout_name(t.layout()), layout_name(ctx.layout));
}

Shape Layer::output_shape(const Shape& input_shape) const { return output_shape_impl(input_shape); }

Tensor Layer::forward(const Tensor& x, Mode mode) {
  check_input(x, "input");
  // The output shape is a function of the input shape: it is worked out (and the input shape validated, a
  // walk over the children for a container) when the input shape changes, not at every step.
  std::optional<Shape> new_output_shape;
  if (!has_forward_ || x.shape() != input_shape_) new_output_shape = output_shape_impl(x.shape());
  const Shape& expected = new_output_shape ? *new_output_shape : output_shape_;
  Tensor y;
  {
    const trace::TraceScope traced("forward", [this] { return describe(); });
    y = forward_impl(x, mode);
  }
  ENGINE_CHECK(y.defined() && y.shape() == expected, "{}: forward produced {} where {} was expected (a bug)",
               describe(), y.str(), shape_str(expected));
  if (new_output_shape) {
    input_shape_ = x.shape();
    output_shape_ = std::move(*new_output_shape);
  }
  has_forward_ = true;
  last_mode_ = mode;
  input_dtype_ = x.dtype();
  return y;
}

Tensor Layer::backward(const Tensor& dy) {
  LAYER_CHECK(has_forward_, "backward before any forward");
  LAYER_CHECK(keeps_for_backward(last_mode_),
              "backward after an inference forward, which keeps nothing for it");
  check_input(dy, "output gradient");
  LAYER_CHECK(dy.shape() == output_shape_, "output gradient {} does not match the last output {}", dy.str(),
              shape_str(output_shape_));
  Tensor dx;
  {
    const trace::TraceScope traced("backward", [this] { return describe(); });
    dx = backward_impl(dy, last_mode_);
  }
  if (!needs_input_grad_) {
    dx = Tensor();
  } else {
    ENGINE_CHECK(dx.defined() && dx.shape() == input_shape_,
                 "{}: backward produced {} where an input gradient of {} was expected (a bug)", describe(),
                 dx.str(), shape_str(input_shape_));
  }
  // Last registered first: over a whole model this walks Model::parameters() from the end to the start.
  if (hook_ && *hook_) {
    for (std::size_t i = params_.size(); i-- > 0;) (*hook_)(params_[i].index);
  }
  return dx;
}

}  // namespace engine::layers
