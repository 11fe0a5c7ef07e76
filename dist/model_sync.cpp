#include "dist/model_sync.h"

#include <cstring>
#include <type_traits>
#include <vector>

#include "core/error.h"

namespace engine::dist {
namespace {

struct ModelFacts {
  std::int64_t count;
  std::int64_t tensors;
  std::uint64_t signature;
};
static_assert(sizeof(ModelFacts) == 24, "ModelFacts is sent as bytes");

// The gloo group reduces host tensors; the NCCL group needs device tensors.
Device collective_device(const ProcessGroup& pg, const layers::Model& model) {
  return pg.backend_kind() == Backend::Nccl ? model.context().device : Device::cpu();
}

// Every rank's `mine` (a plain value), rank 0's first: one all-gather of its bytes.
template <typename T>
std::vector<T> all_gather_value(ProcessGroup& pg, const layers::Model& model, const T& mine) {
  static_assert(std::is_trivially_copyable_v<T>);
  Tensor in = Tensor::empty({static_cast<std::int64_t>(sizeof(T))}, DType::U8);
  std::memcpy(in.raw_data(), &mine, sizeof(T));
  const Device dev = collective_device(pg, model);
  void* stream = dev.is_cuda() ? model.context().stream : nullptr;
  Tensor out =
      Tensor::empty({static_cast<std::int64_t>(sizeof(T)) * pg.world_size()}, DType::U8, dev, stream);
  pg.all_gather(dev.is_cuda() ? in.to(dev, stream) : in, out, stream);
  const Tensor host = out.device().is_cpu() ? out : out.to(Device::cpu(), stream);
  std::vector<T> all(static_cast<std::size_t>(pg.world_size()));
  std::memcpy(all.data(), host.raw_data(), sizeof(T) * all.size());
  return all;
}

}  // namespace

std::uint64_t model_signature(const layers::Model& model) {
  std::uint64_t h = 1469598103934665603ull;
  auto mix = [&h](const void* data, std::size_t n) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (std::size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  };
  const DType dt = model.context().dtype;
  mix(&dt, sizeof(dt));
  for (const layers::Parameter& p : model.parameters()) {
    mix(p.name.data(), p.name.size() + 1);
    for (std::int64_t d : p.value.shape()) mix(&d, sizeof(d));
    const char end = ';';
    mix(&end, 1);
  }
  return h;
}

void verify_same_model(ProcessGroup& pg, const layers::Model& model) {
  ENGINE_CHECK(model.finalized(), "verify_same_model: model '{}' is not finalized", model.name());
  const ModelFacts mine{model.parameter_count(), static_cast<std::int64_t>(model.parameters().size()),
                        model_signature(model)};
  const std::vector<ModelFacts> all = all_gather_value(pg, model, mine);
  const ModelFacts& ref = all[0];
  for (int r = 1; r < pg.world_size(); ++r) {
    const ModelFacts& f = all[static_cast<std::size_t>(r)];
    ENGINE_CHECK(
        f.count == ref.count && f.tensors == ref.tensors && f.signature == ref.signature,
        "the ranks built different models: rank {} has {} parameters in {} tensors (names and shapes "
        "hash {:016x}), rank 0 has {} parameters in {} tensors (hash {:016x}). Every rank must run the "
        "same --model and input shape.",
        r, f.count, f.tensors, f.signature, ref.count, ref.tensors, ref.signature);
  }
}

std::uint64_t weights_digest(const layers::Model& model) {
  std::uint64_t h = 1469598103934665603ull;
  for (const Tensor* t : {&model.flat_parameters(), &model.flat_buffers()}) {
    if (!t->defined() || t->numel() == 0) continue;
    const Tensor host = t->device().is_cpu() ? *t : t->to(Device::cpu(), model.context().stream);
    const auto* p = static_cast<const unsigned char*>(host.raw_data());
    const std::size_t n = static_cast<std::size_t>(host.numel()) * dtype_size(host.dtype());
    for (std::size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  }
  return h;
}

void verify_replicas(ProcessGroup& pg, const layers::Model& model, std::string_view when) {
  const std::vector<std::uint64_t> all = all_gather_value(pg, model, weights_digest(model));
  for (int r = 1; r < pg.world_size(); ++r) {
    ENGINE_CHECK(all[static_cast<std::size_t>(r)] == all[0],
                 "{}: the weights of rank {} differ from rank 0's (digest {:016x} vs {:016x}); the replicas "
                 "went apart, so the gradients were not averaged identically on every rank",
                 when, r, all[static_cast<std::size_t>(r)], all[0]);
  }
}

void broadcast_parameters(ProcessGroup& pg, const layers::Model& model) {
  ENGINE_CHECK(model.finalized(), "broadcast_parameters: model '{}' is not finalized", model.name());
  pg.broadcast(model.flat_parameters(), 0, model.context().stream);
  model.parameters_written();  // bf16 autocast: the mirror follows rank 0's weights
  broadcast_buffers(pg, model);
}

void broadcast_buffers(ProcessGroup& pg, const layers::Model& model) {
  ENGINE_CHECK(model.finalized(), "broadcast_buffers: model '{}' is not finalized", model.name());
  if (model.flat_buffers().defined() && model.flat_buffers().numel() > 0) {
    pg.broadcast(model.flat_buffers(), 0, model.context().stream);
  }
}

}  // namespace engine::dist
