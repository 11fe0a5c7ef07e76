#pragma once
// Model: a root layer plus the storage of its whole tree, and the lists a trainer, an optimizer, DDP and a
// checkpoint writer need.
//
// finalize(context, seed) walks the tree in registration order (a layer's own parameters, then its buffers,
// then its children, depth first: the order of PyTorch's named_parameters() and state_dict()), and
//   - names every parameter, buffer and counter by its path, exactly as the equivalent torch.nn module would
//     ("features.0.weight", "layer1.0.shortcut.1.running_var", "bn1.num_batches_tracked");
//   - allocates ONE flat parameter buffer and ONE flat gradient buffer on the context's device, and gives
//   each
//     parameter views into both at the same element offset (aligned to kParameterAlignment elements; the
//     padding between parameters stays zero in both buffers, so updating or all-reducing the whole buffer is
//     harmless). An optimizer step over the model is one call on two flat arrays; a DDP bucket is a slice;
//   - allocates one flat buffer for the float buffers (BatchNorm running statistics), for one broadcast;
//   - initializes every parameter from Philox with the seed (layers/init.h) and every buffer to its fill:
//     the same seed gives bit-identical weights on every rank and device;
//   - binds every layer to the shared ExecutionContext and grad-ready hook;
//   - first of all, unless set_fusion(false): fuses every BatchNorm2d -> ReLU pair of a Sequential
//     and, in float32 models, folds the bias of every Conv2d followed by a BatchNorm2d into it
//     (layers/fusion.h), which changes the kernels run and nothing in the state dict.
//
// Backward OVERWRITES the gradients (there is no accumulation across backward calls; nothing to zero).

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "layers/layer.h"

namespace engine::layers {

// Offsets in the flat buffers are multiples of this many elements (128 bytes in float32): vector loads and
// cuDNN/cuBLAS see aligned pointers for every parameter.
inline constexpr std::int64_t kParameterAlignment = 32;

struct Parameter {
  std::string name;        // state-dict name: "features.0.weight"
  Tensor value;            // view into Model::flat_parameters()
  Tensor grad;             // view into Model::flat_gradients(), at the same offset
  std::int64_t offset;     // element offset of both views
  Layer* layer;            // the owner
  Tensor value_bf16 = {};  // view into Model::flat_parameters_bf16() (bf16 autocast only), same offset
};

struct Buffer {
  std::string name;  // "features.1.running_mean"
  Tensor value;      // view into Model::flat_buffers()
  std::int64_t offset;
  Layer* layer;
};

// An int64 kept on the host (BatchNorm's num_batches_tracked: PyTorch's 0-dim int64 buffer).
struct Counter {
  std::string name;  // "features.1.num_batches_tracked"
  std::int64_t* value;
  Layer* layer;
};

// One entry of the state dict, in PyTorch's order; `index` points into parameters(), buffers() or counters().
struct StateEntry {
  enum class Kind { Parameter, Buffer, Counter };
  Kind kind;
  std::string name;
  std::size_t index;
};

class Model {
 public:
  // `name` is for messages ("vgg6"); `sample_shape` is the per-sample input shape [C, H, W] it was built for
  // (empty when unknown). The root's needs_input_grad starts false: the first layer computes no dx.
  Model(std::string name, std::unique_ptr<Layer> root, Shape sample_shape = {});
  Model(Model&&) noexcept = default;
  Model& operator=(Model&&) noexcept = default;

  void finalize(const ExecutionContext& context, std::uint64_t init_seed);
  // Whether finalize runs the fusion pass (default on; off to compare with the unfused kernels).
  void set_fusion(bool enabled);
  bool fusion() const { return fusion_; }
  // How many BatchNorm2d -> ReLU pairs finalize fused.
  int fused_batchnorm_relu() const { return fused_batchnorm_relu_; }
  // How many Conv2d biases finalize folded into the BatchNorm2d after them (float32 models only).
  int folded_conv_bias() const { return folded_conv_bias_; }
  bool finalized() const { return finalized_; }

  // The output is in the context's dtype: under bf16 autocast the activations inside are bf16 and the last
  // one is widened (exactly) on the way out, so the loss, metrics, test-time augmentation and predictions
  // read float32 (PyTorch users call .float() on autocast's output); dy may be float32 or bf16.
  // The one place where an input changes layout: a 4-d NCHW input (what the loaders give) of a model whose
  // context is NHWC (or blocked, where its channels fill blocks: core/layout.h's activation_layout) is
  // transposed before the root sees it; backward transposes dL/dx back.
  Tensor forward(const Tensor& x, Mode mode);
  // Returns dL/dx (in the layout of the last forward's input) when set_needs_input_grad(true), else an
  // undefined tensor.
  Tensor backward(const Tensor& dy);
  Shape output_shape(const Shape& input_shape) const { return root_->output_shape(input_shape); }

  void set_grad_ready_hook(GradReadyHook hook) { *hook_ = std::move(hook); }
  void set_needs_input_grad(bool needs) { root_->set_needs_input_grad(needs); }

  const std::vector<Parameter>& parameters() const { return params_; }
  const std::vector<Buffer>& buffers() const { return buffers_; }
  const std::vector<Counter>& counters() const { return counters_; }
  const std::vector<StateEntry>& state_dict() const { return state_; }

  // The sum of the parameters' element counts (the number PyTorch's sum(p.numel()) prints); known before
  // finalize.
  std::int64_t parameter_count() const;

  const Tensor& flat_parameters() const { return flat_params_; }
  const Tensor& flat_gradients() const { return flat_grads_; }
  const Tensor& flat_buffers() const { return flat_buffers_; }

  // bf16 autocast (ExecutionContext::autocast_bf16): the bf16 mirror of the flat parameter buffer, the
  // weights Conv2d and Linear compute with; undefined otherwise. The fp32 buffer stays the master (the
  // optimizer's, the checkpoint's). Sgd::step writes both in one pass; every other writer of the parameters
  // (initialization, checkpoint load, broadcast from rank 0, EMA copies and swaps) calls
  // parameters_written(), which re-rounds the whole mirror. check_bf16_mirror() compares the mirror with the
  // rounded master on the host and throws naming the first stale parameter: the tests call it after each
  // writer, the trainer after every epoch, so a writer that forgets cannot go unnoticed for long.
  const Tensor& flat_parameters_bf16() const { return flat_params_bf16_; }
  void parameters_written() const;  // const as flat_parameters(): it writes tensor data, not the model
  void check_bf16_mirror(const std::string& who) const;

  ExecutionContext& context() const;
  Layer& root() const { return *root_; }
  const std::string& name() const { return name_; }
  const Shape& sample_shape() const { return sample_shape_; }

 private:
  std::string name_;
  std::unique_ptr<Layer> root_;
  Shape sample_shape_;
  std::shared_ptr<ExecutionContext> context_;
  std::shared_ptr<GradReadyHook> hook_ = std::make_shared<GradReadyHook>();
  std::vector<Parameter> params_;
  std::vector<Buffer> buffers_;
  std::vector<Counter> counters_;
  std::vector<StateEntry> state_;
  Tensor flat_params_, flat_grads_, flat_buffers_, flat_params_bf16_;
  bool finalized_ = false;
  bool input_transposed_ = false;       // the last forward transposed its input (backward transposes dx back)
  Layout input_layout_ = Layout::NCHW;  // that input's layout
  bool fusion_ = true;
  int fused_batchnorm_relu_ = 0;
  int folded_conv_bias_ = 0;
};

}  // namespace engine::layers
