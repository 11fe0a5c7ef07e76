#pragma once
// The layer contract (manual autograd), after tiny-cuda-nn: public non-virtual forward/backward check shapes,
// devices and dtypes, then call a small virtual forward_impl/backward_impl.
//
//   y  = layer.forward(x, mode)   keeps what backward needs (the input, a max-pool argmax, a dropout offset,
//                                 BatchNorm's saved mean and invstd; nothing in Mode::Inference) and
//                                 remembers the mode
//   dx = layer.backward(dy)       OVERWRITES the layer's parameter gradients (there is no accumulation across
//                                 backward calls), fires the grad-ready hook for each of them, and returns
//                                 dL/dx, or an undefined Tensor when needs_input_grad() is false (the model's
//                                 first layer: nothing consumes its dx, so it is never computed)
//
// A layer owns the DESCRIPTION of its parameters (local name, shape, initialization), buffers (BatchNorm's
// running statistics) and counters (num_batches_tracked). The storage comes from the Model (layers/model.h):
// Model::finalize gives every parameter a view into ONE flat parameter buffer and the same view into ONE flat
// gradient buffer, so an optimizer can update the whole model with one call and DDP buckets are slices of the
// gradient buffer, never copies. A layer is usable only once its model is finalized.
//
// A layer runs on the device of its tensors: the CPU reference kernels (kernels/cpu, float or double) or the
// CUDA kernels / cuDNN / cuBLAS (kernels/cuda, float). There is no fallback: a tensor on another device than
// the model's, or a dtype the device cannot run, is an engine::Error naming the layer.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "core/tensor.h"
#include "layers/execution_context.h"

namespace engine::layers {

enum class Mode {
  Train,
  Eval,       // running statistics, no dropout; keeps what backward needs (backward in eval mode is allowed)
  Inference,  // Eval's arithmetic, but nothing is kept for backward (and what an earlier forward kept is
              // released): evaluation and prediction. Backward after it is an error.
};

// Whether a forward in `mode` keeps what backward needs (the input, an argmax, BatchNorm's saved stats).
constexpr bool keeps_for_backward(Mode mode) { return mode != Mode::Inference; }

// Called with a parameter's index in Model::parameters() as soon as its gradient is final: during the model's
// backward, right after the layer that owns it. The DDP Reducer listens here to start bucket all-reduces
// while the rest of backward runs. On a CUDA device "final" means "queued on the context's stream".
using GradReadyHook = std::function<void(std::size_t param_index)>;

// PyTorch's default initializations.
enum class ParamInit {
  // U(-1/sqrt(fan_in), 1/sqrt(fan_in)). For Conv2d/Linear weights this IS kaiming_uniform_(a=sqrt(5)): the
  // bound gain * sqrt(3 / fan_in) with gain = sqrt(2 / (1 + a^2)) = sqrt(1/3) is 1/sqrt(fan_in). Their biases
  // use the same bound by definition.
  FanInUniform,
  // FanInUniform, then the first min(out, in) filters of a conv weight [out, in, k, k] set to the identity
  // (torch.nn.init.dirac_ on weight[:in]: 1 at [i, i, k/2, k/2], 0 elsewhere): airbench94's Conv, "an
  // implicit
  // residual".
  FanInUniformDirac,
  Ones,   // BatchNorm weight (gamma)
  Zeros,  // BatchNorm bias (beta)
};

struct ParamSlot {
  std::string name;  // local: "weight", "bias"
  Shape shape;
  ParamInit init = ParamInit::Zeros;
  std::int64_t fan_in = 0;    // for FanInUniform
  Tensor value;               // view into the model's flat parameter buffer (undefined until finalize)
  Tensor grad;                // view into the model's flat gradient buffer, same offset
  Tensor value_bf16;          // view into the model's bf16 mirror, same offset (bf16 autocast only)
  std::size_t index = 0;      // position in Model::parameters()
  std::vector<double> given;  // initial values from a model file (layers/onnx/); empty: `init` decides
};

struct BufferSlot {
  std::string name;  // local: "running_mean"
  Shape shape;
  double fill = 0.0;          // initial value of every element
  Tensor value;               // view into the model's flat buffer of buffers (undefined until finalize)
  std::vector<double> given;  // initial values from a model file; empty: every element is `fill`
};

// An int64 a layer keeps on the host. PyTorch stores BatchNorm's num_batches_tracked as a 0-dim int64 buffer;
// the engine has no int64 tensors, and the count is only ever read on the host (for a checkpoint), so it is
// a host integer, listed with the state so checkpoints can write it under its PyTorch name.
struct CounterSlot {
  std::string name;  // local: "num_batches_tracked"
  std::int64_t value = 0;
};

class Layer;
struct NamedChild {
  std::string name;  // the child's name in the state dict: "0", "conv1", "shortcut"
  Layer* layer;
};

class Layer {
 public:
  virtual ~Layer() = default;
  Layer(const Layer&) = delete;
  Layer& operator=(const Layer&) = delete;

  Tensor forward(const Tensor& x, Mode mode);
  Tensor backward(const Tensor& dy);

  // The output shape for an input shape, computing nothing. Throws engine::Error naming the layer when the
  // layer does not accept that input (wrong rank, channels, a kernel larger than the input, ...).
  Shape output_shape(const Shape& input_shape) const;

  virtual std::string_view kind() const = 0;         // "Conv2d"
  const std::string& path() const { return path_; }  // "layer1.0.conv1" once in a Model ("" for its root)
  std::string describe() const;                      // "Conv2d 'layer1.0.conv1'"

  bool finalized() const { return context_ != nullptr; }  // its model is finalized: it can run
  bool needs_input_grad() const { return needs_input_grad_; }
  void set_needs_input_grad(bool needs);

  // This layer's own state (not its children's), in registration order.
  const std::vector<ParamSlot>& parameter_slots() const { return params_; }
  const std::vector<BufferSlot>& buffer_slots() const { return buffers_; }
  const std::vector<CounterSlot>& counter_slots() const { return counters_; }
  // Sub-layers in registration order, under the names PyTorch's equivalent module gives them.
  virtual std::vector<NamedChild> children() const { return {}; }

  // Initial values for this layer's parameter or buffer `local_name` ("weight", "running_var"), in place of
  // its initialization: a model read from a file (ONNX initializers) starts from the file's values. Before
  // the model is finalized; throws naming the layer when there is no such slot or the count is wrong.
  void set_initial_values(std::string_view local_name, std::vector<double> values);

  // The shapes of the last forward call (empty before the first).
  const Shape& last_input_shape() const { return input_shape_; }
  const Shape& last_output_shape() const { return output_shape_; }

 protected:
  Layer() = default;

  // Called by forward() after the checks, with x of an accepted shape. Returns y of output_shape(x.shape()).
  virtual Tensor forward_impl(const Tensor& x, Mode mode) = 0;
  // Called by backward() after the checks, with dy of the last output's shape. `mode` is the last forward's.
  // Must write every parameter gradient and return dx (of the last input's shape) when needs_input_grad().
  virtual Tensor backward_impl(const Tensor& dy, Mode mode) = 0;
  virtual Shape output_shape_impl(const Shape& input_shape) const = 0;
  // Containers pass the flag on to the children that receive the container's input.
  virtual void on_needs_input_grad_changed() {}

  // Registration, from the constructor. Returns the slot's position in parameter_slots() / ...
  std::size_t add_parameter(std::string name, Shape shape, ParamInit init, std::int64_t fan_in = 0);
  std::size_t add_buffer(std::string name, Shape shape, double fill);
  std::size_t add_counter(std::string name);

  const ParamSlot& param(std::size_t i) const { return params_.at(i); }
  BufferSlot& buffer(std::size_t i) { return buffers_.at(i); }
  CounterSlot& counter(std::size_t i) { return counters_.at(i); }

  ExecutionContext& context() const;
  // Uninitialized memory on the context's device, tagged with its stream; a 4-d tensor in the context's
  // layout (forward() and backward() refuse a 4-d input in another).
  Tensor new_tensor(const Shape& shape) const;               // in the context's dtype
  Tensor new_tensor(const Shape& shape, DType dtype) const;  // in another dtype (max-pool's int32 argmax)
  // Activations and their gradients: a layer's output has its input's dtype, and its input gradient the
  // dtype of the input it had (bf16 autocast keeps activations in bf16 on either device,
  // kernels/ops/bf16_storage.h), except Conv2d and Linear, which write autocast_output_dtype().
  Tensor new_input_grad() const { return new_tensor(input_shape_, input_dtype_); }
  // BF16 under bf16 autocast (the model's parameters stay in the context's dtype), else the context's dtype.
  DType autocast_output_dtype() const;

 private:
  friend class Model;
  // Called by the Model for every layer of its tree: the path when the model is made, the rest on finalize.
  void set_path(std::string path) { path_ = std::move(path); }
  void bind(std::shared_ptr<ExecutionContext> context, std::shared_ptr<GradReadyHook> hook);
  ParamSlot& mutable_param(std::size_t i) { return params_.at(i); }
  BufferSlot& mutable_buffer(std::size_t i) { return buffers_.at(i); }
  CounterSlot& mutable_counter(std::size_t i) { return counters_.at(i); }
  void check_input(const Tensor& t, const char* what) const;

  std::vector<ParamSlot> params_;
  std::vector<BufferSlot> buffers_;
  std::vector<CounterSlot> counters_;
  std::shared_ptr<ExecutionContext> context_;
  std::shared_ptr<GradReadyHook> hook_;
  std::string path_;
  bool needs_input_grad_ = true;
  bool has_forward_ = false;
  Mode last_mode_ = Mode::Train;
  Shape input_shape_, output_shape_;
  DType input_dtype_ = DType::F32;
};

// A layer's shape/argument check: throws engine::Error("Conv2d 'features.0': <message>").
#define LAYER_CHECK(cond, ...) ENGINE_CHECK(cond, "{}: {}", describe(), ::fmt::format(__VA_ARGS__))

}  // namespace engine::layers
