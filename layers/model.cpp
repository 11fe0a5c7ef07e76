#include "layers/model.h"

#include <algorithm>
#include <map>
#include <utility>

#include "kernels/ops/bf16_storage.h"
#include "kernels/ops/cast.h"
#include "kernels/ops/dispatch.h"
#include "kernels/ops/transpose.h"
#include "layers/fusion.h"
#include "layers/init.h"

namespace engine::layers {

namespace {

std::int64_t align_up(std::int64_t n) {
  return (n + kParameterAlignment - 1) / kParameterAlignment * kParameterAlignment;
}

std::string join(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "." + name;
}

// Depth first, a layer before its children: PyTorch's named_modules() order.
template <typename Fn>
void walk(Layer& layer, const std::string& path, Fn& fn) {
  fn(layer, path);
  for (const NamedChild& c : layer.children()) walk(*c.layer, join(path, c.name), fn);
}

// Copies double values into `dst` (float32 or float64) at `offset`.
void store(Tensor& dst, std::int64_t offset, const std::vector<double>& values) {
  if (dst.dtype() == DType::F64) {
    std::copy(values.begin(), values.end(), dst.data<double>() + offset);
  } else {
    float* p = dst.data<float>() + offset;
    for (std::size_t i = 0; i < values.size(); ++i) p[i] = static_cast<float>(values[i]);
  }
}

}  // namespace

Model::Model(std::string name, std::unique_ptr<Layer> root, Shape sample_shape)
    : name_(std::move(name)), root_(std::move(root)), sample_shape_(std::move(sample_shape)) {
  ENGINE_CHECK(root_ != nullptr, "model '{}' has no root layer", name_);
  root_->set_needs_input_grad(false);
  // Paths now, so that errors from shape checks name the layer even before finalize.
  auto name_layer = [](Layer& layer, const std::string& path) { layer.set_path(path); };
  walk(*root_, "", name_layer);
}

Tensor Model::forward(const Tensor& x, Mode mode) {
  if (!context_) return root_->forward(x, mode);  // the layer says what is missing
  const ExecutionContext& ctx = *context_;
  input_transposed_ = x.defined() && x.ndim() == 4 &&
                      x.layout() != activation_layout(ctx.layout, x.dim(1), x.dim(2) * x.dim(3));
  input_layout_ = x.defined() ? x.layout() : Layout::NCHW;
  Tensor y = root_->forward(
      input_transposed_ ? ops::to_layout(ctx, x, activation_layout(ctx.layout, x.dim(1), x.dim(2) * x.dim(3)))
                        : x,
      mode);
  return y.dtype() == DType::BF16 ? ops::bf16::widened(ctx, y) : y;
}

Tensor Model::backward(const Tensor& dy) {
  Tensor dx = root_->backward(dy);
  if (!dx.defined() || !input_transposed_) return dx;
  const ExecutionContext& ctx = context();
  return ops::to_layout(ctx, dx, input_layout_);
}

ExecutionContext& Model::context() const {
  ENGINE_CHECK(context_ != nullptr, "model '{}' is not finalized: call finalize first", name_);
  return *context_;
}

std::int64_t Model::parameter_count() const {
  std::int64_t n = 0;
  auto count = [&n](Layer& layer, const std::string&) {
    for (const ParamSlot& p : layer.parameter_slots()) n += shape_numel(p.shape);
  };
  walk(*root_, "", count);
  return n;
}

void Model::set_fusion(bool enabled) {
  ENGINE_CHECK(!finalized_, "model '{}': fusion is chosen before finalize", name_);
  fusion_ = enabled;
}

void Model::finalize(const ExecutionContext& context, std::uint64_t init_seed) {
  ENGINE_CHECK(!finalized_, "model '{}' is already finalized", name_);
  const bool cpu_ok = context.device.is_cpu() && (context.dtype == DType::F32 || context.dtype == DType::F64);
  const bool cuda_ok = context.device.is_cuda() && context.dtype == DType::F32;
  ENGINE_CHECK(cpu_ok || cuda_ok,
               "model '{}': {} does not run {} (the CPU runs float32 and float64, CUDA float32)", name_,
               context.device.str(), dtype_name(context.dtype));
  ENGINE_CHECK(!context.autocast_bf16 || context.dtype == DType::F32,
               "model '{}': bf16 autocast runs on float32 models, not {}", name_, dtype_name(context.dtype));
  ENGINE_CHECK(
      !(context.autocast_bf16 && context.device.is_cuda() &&
        context.conv_algorithm == ConvAlgorithm::ImplicitGemm),
      "model '{}': bf16 autocast runs its convolutions on cuDNN (bf16 tensor cores); the implicit-GEMM "
      "convolution is float32 only",
      name_);
  if constexpr (kHaveCuda) {
    if (context.device.is_cuda()) ops::check_cuda_context(fmt::format("model '{}'", name_), context);
  }
  if (fusion_) {
    fused_batchnorm_relu_ = fuse_batchnorm_relu(*root_);
    if (context.dtype != DType::F64) folded_conv_bias_ = fold_conv_bias_into_batchnorm(*root_);
  }
  context_ = std::make_shared<ExecutionContext>(context);

  // 1. Names and offsets, in registration order.
  std::map<std::string, std::string> seen;  // name -> the layer that holds it, to report a duplicate
  auto claim = [&](const std::string& name, const Layer& owner) {
    const auto [it, inserted] = seen.emplace(name, owner.describe());
    ENGINE_CHECK(inserted, "model '{}': two state entries named '{}' (in {} and in {})", name_, name,
                 it->second, owner.describe());
  };
  std::int64_t param_elems = 0, buffer_elems = 0;
  auto layout = [&](Layer& layer, const std::string& path) {
    for (std::size_t i = 0; i < layer.parameter_slots().size(); ++i) {
      const ParamSlot& slot = layer.parameter_slots()[i];
      const std::string name = join(path, slot.name);
      claim(name, layer);
      state_.push_back({StateEntry::Kind::Parameter, name, params_.size()});
      params_.push_back({name, Tensor(), Tensor(), param_elems, &layer});
      param_elems = align_up(param_elems + shape_numel(slot.shape));
    }
    for (std::size_t i = 0; i < layer.buffer_slots().size(); ++i) {
      const BufferSlot& slot = layer.buffer_slots()[i];
      const std::string name = join(path, slot.name);
      claim(name, layer);
      state_.push_back({StateEntry::Kind::Buffer, name, buffers_.size()});
      buffers_.push_back({name, Tensor(), buffer_elems, &layer});
      buffer_elems += shape_numel(slot.shape);
    }
    for (std::size_t i = 0; i < layer.counter_slots().size(); ++i) {
      const std::string name = join(path, layer.counter_slots()[i].name);
      claim(name, layer);
      state_.push_back({StateEntry::Kind::Counter, name, counters_.size()});
      counters_.push_back({name, &layer.mutable_counter(i).value, &layer});
    }
  };
  walk(*root_, "", layout);

  // 2. Storage: initial values are made on the host (identical everywhere) and copied once.
  const Device device = context.device;
  const bool on_host = device.is_cpu();
  flat_params_ = Tensor::zeros({param_elems}, context.dtype, device, context.stream);
  flat_grads_ = Tensor::zeros({param_elems}, context.dtype, device, context.stream);
  flat_buffers_ = Tensor::zeros({buffer_elems}, context.dtype, device, context.stream);
  if (context.autocast_bf16)
    flat_params_bf16_ = Tensor::zeros({param_elems}, DType::BF16, device, context.stream);
  Tensor host_params = on_host ? flat_params_ : Tensor::zeros({param_elems}, context.dtype);
  Tensor host_buffers = on_host ? flat_buffers_ : Tensor::zeros({buffer_elems}, context.dtype);

  // 3. Views, initial values, binding.
  std::size_t next_param = 0, next_buffer = 0;
  auto bind = [&](Layer& layer, const std::string&) {
    for (std::size_t i = 0; i < layer.parameter_slots().size(); ++i) {
      Parameter& p = params_[next_param];
      ParamSlot& slot = layer.mutable_param(i);
      slot.value = flat_params_.flat_range(p.offset, slot.shape);
      slot.grad = flat_grads_.flat_range(p.offset, slot.shape);
      if (flat_params_bf16_.defined()) slot.value_bf16 = flat_params_bf16_.flat_range(p.offset, slot.shape);
      p.value_bf16 = slot.value_bf16;
      slot.index = next_param;
      p.value = slot.value;
      p.grad = slot.grad;
      store(host_params, p.offset, initial_values(slot, init_seed, next_param));
      ++next_param;
    }
    for (std::size_t i = 0; i < layer.buffer_slots().size(); ++i) {
      Buffer& b = buffers_[next_buffer++];
      BufferSlot& slot = layer.mutable_buffer(i);
      slot.value = flat_buffers_.flat_range(b.offset, slot.shape);
      b.value = slot.value;
      store(host_buffers, b.offset,
            slot.given.empty()
                ? std::vector<double>(static_cast<std::size_t>(shape_numel(slot.shape)), slot.fill)
                : slot.given);
    }
    layer.bind(context_, hook_);
  };
  walk(*root_, "", bind);

  if (!on_host) {
    flat_params_.copy_from(host_params, context.stream);
    flat_buffers_.copy_from(host_buffers, context.stream);
  }
  finalized_ = true;
  parameters_written();
}

void Model::parameters_written() const {
  ENGINE_CHECK(finalized_, "model '{}' is not finalized: call finalize first", name_);
  if (flat_params_bf16_.defined()) ops::cast_to_bf16(*context_, flat_params_, flat_params_bf16_);
}

void Model::check_bf16_mirror(const std::string& who) const {
  if (!flat_params_bf16_.defined()) return;
  const Tensor master = flat_params_.to(Device::cpu(), context_->stream);
  const Tensor mirror = flat_params_bf16_.to(Device::cpu(), context_->stream);
  const float* m = master.data<float>();
  const bfloat16* b = mirror.data<bfloat16>();
  for (const Parameter& p : params_) {
    for (std::int64_t i = p.offset; i < p.offset + p.value.numel(); ++i) {
      ENGINE_CHECK(to_bfloat16(m[i]).bits == b[i].bits,
                   "{}: model '{}': the bf16 mirror of '{}' is stale at element {} (master {}, mirror {}): a "
                   "writer of the parameters did not call Model::parameters_written()",
                   who, name_, p.name, i - p.offset, m[i], from_bfloat16(b[i]));
    }
  }
}

}  // namespace engine::layers
