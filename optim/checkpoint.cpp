#include "optim/checkpoint.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <set>
#include <vector>

#include <zlib.h>

#include "core/error.h"

namespace engine::optim {

namespace {

using layers::Model;
using layers::StateEntry;

std::string safetensors_dtype(DType dtype) {
  switch (dtype) {
    case DType::F32: return "F32";
    case DType::F64: return "F64";
    default: ENGINE_FAIL("checkpoints hold float32 or float64 models, not {}", dtype_name(dtype));
  }
}

std::span<const std::uint8_t> host_bytes(const Tensor& host) {
  return {static_cast<const std::uint8_t*>(host.raw_data()), host.nbytes()};
}

// The tensor behind a parameter or buffer entry of the state dict.
const Tensor& entry_tensor(const Model& model, const StateEntry& e) {
  return e.kind == StateEntry::Kind::Parameter ? model.parameters()[e.index].value
                                               : model.buffers()[e.index].value;
}

std::uint64_t metadata_u64(const SafetensorsFile& file, const std::string& key) {
  const auto it = file.metadata().find(key);
  if (it == file.metadata().end()) return 0;
  std::uint64_t v = 0;
  const std::string& text = it->second;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  ENGINE_CHECK(ec == std::errc() && end == text.data() + text.size(),
               "checkpoint '{}': metadata '{}' = '{}' is not a non-negative integer", file.source(), key,
               text);
  return v;
}

// Checks that `entry` (named `name` in the file) can hold a tensor of `dtype` and `shape`.
void check_entry(const SafetensorsFile& file, const std::string& name, const SafetensorsFile::Entry* entry,
                 const std::string& dtype, const Shape& shape, const Model& model) {
  ENGINE_CHECK(entry != nullptr,
               "checkpoint '{}' has no tensor '{}', which model '{}' needs (a checkpoint of another model?)",
               file.source(), name, model.name());
  ENGINE_CHECK(entry->dtype == dtype, "checkpoint '{}': tensor '{}' is {}, model '{}' needs {}",
               file.source(), name, entry->dtype, model.name(), dtype);
  ENGINE_CHECK(entry->shape == shape, "checkpoint '{}': tensor '{}' has shape {}, model '{}' needs {}",
               file.source(), name, shape_str(entry->shape), model.name(), shape_str(shape));
}

void copy_into(const Tensor& dst, std::span<const std::uint8_t> bytes, void* stream) {
  if (dst.device().is_cpu()) {
    std::memcpy(dst.raw_data(), bytes.data(), bytes.size());
    return;
  }
  Tensor host = Tensor::empty(dst.shape(), dst.dtype());
  std::memcpy(host.raw_data(), bytes.data(), bytes.size());
  Tensor view = dst;
  view.copy_from(host, stream);
}

// zlib's crc32 takes at most 4 GiB per call.
std::uint32_t crc32_of(std::uint32_t crc, std::span<const std::uint8_t> bytes) {
  constexpr std::size_t kPiece = std::size_t{1} << 30;
  for (std::size_t at = 0; at < bytes.size(); at += kPiece) {
    const std::size_t n = std::min(kPiece, bytes.size() - at);
    crc = static_cast<std::uint32_t>(::crc32(crc, bytes.data() + at, static_cast<uInt>(n)));
  }
  return crc;
}

std::string hex32(std::uint32_t v) { return fmt::format("{:08x}", v); }

std::uint32_t crc32_of_text(std::uint32_t crc, const std::string& text) {
  // With its terminating zero, so "ab","c" and "a","bc" differ.
  return crc32_of(crc, {reinterpret_cast<const std::uint8_t*>(text.c_str()), text.size() + 1});
}

// The checksum of a checkpoint: its data block, then every tensor's name, dtype, shape and offsets, then
// every metadata entry but the checksum itself (both in name order), so a changed header value ("epoch",
// a shape) is seen as well as a changed tensor byte; only the JSON's spacing is not covered.
// `crc` is the data block's CRC-32.
std::uint32_t checkpoint_crc(std::uint32_t crc, const std::map<std::string, SafetensorsFile::Entry>& entries,
                             const std::map<std::string, std::string>& metadata) {
  for (const auto& [name, e] : entries) {
    crc = crc32_of_text(crc, name);
    crc = crc32_of_text(crc, e.dtype);
    crc = crc32_of_text(crc, fmt::format("{} {} {}", shape_str(e.shape), e.begin, e.end));
  }
  for (const auto& [key, value] : metadata) {
    if (key == kChecksumKey) continue;
    crc = crc32_of_text(crc, key);
    crc = crc32_of_text(crc, value);
  }
  return crc;
}

}  // namespace

bool verify_checkpoint_checksum(const SafetensorsFile& file) {
  const auto it = file.metadata().find(kChecksumKey);
  if (it == file.metadata().end()) return false;
  const std::string actual = hex32(checkpoint_crc(crc32_of(0, file.data()), file.entries(), file.metadata()));
  ENGINE_CHECK(it->second == actual,
               "checkpoint '{}' is corrupt: its CRC-32 is {}, its metadata says {} (bytes changed on disk "
               "or in a copy; not loaded)",
               file.source(), actual, it->second);
  return true;
}

void save_checkpoint(const std::string& path, const Model& model, const Sgd* sgd, const TrainingState& state,
                     const WriteOptions& options, const WeightAverage* ema) {
  ENGINE_CHECK(model.finalized(), "save_checkpoint '{}': model '{}' is not finalized", path, model.name());
  void* stream = model.context().stream;
  const std::string dtype = safetensors_dtype(model.context().dtype);
  // One host copy of each flat buffer; the records are views into them.
  const Tensor params = model.flat_parameters().to(Device::cpu(), stream);
  const Tensor buffers =
      model.flat_buffers().numel() > 0 ? model.flat_buffers().to(Device::cpu(), stream) : Tensor();
  std::vector<std::int64_t> counters;
  counters.reserve(model.counters().size());
  for (const layers::Counter& c : model.counters()) counters.push_back(*c.value);

  std::vector<TensorRecord> records;
  for (const StateEntry& e : model.state_dict()) {
    switch (e.kind) {
      case StateEntry::Kind::Parameter: {
        const layers::Parameter& p = model.parameters()[e.index];
        records.push_back(
            {e.name, dtype, p.value.shape(), host_bytes(params.flat_range(p.offset, p.value.shape()))});
        break;
      }
      case StateEntry::Kind::Buffer: {
        const layers::Buffer& b = model.buffers()[e.index];
        records.push_back(
            {e.name, dtype, b.value.shape(), host_bytes(buffers.flat_range(b.offset, b.value.shape()))});
        break;
      }
      case StateEntry::Kind::Counter:
        records.push_back(
            {e.name, "I64", {}, {reinterpret_cast<const std::uint8_t*>(&counters[e.index]), 8}});
        break;
    }
  }
  Tensor momentum;
  if (sgd != nullptr && sgd->momentum_buffer().defined() && sgd->has_momentum_state()) {
    momentum = sgd->momentum_buffer().to(Device::cpu(), stream);
    for (const layers::Parameter& p : model.parameters()) {
      records.push_back({kMomentumPrefix + p.name, dtype, p.value.shape(),
                         host_bytes(momentum.flat_range(p.offset, p.value.shape()))});
    }
  }

  Tensor ema_params, ema_buffers;
  if (ema != nullptr && ema->initialized()) {
    ema_params = ema->parameters().to(Device::cpu(), stream);
    if (ema->buffers().defined()) ema_buffers = ema->buffers().to(Device::cpu(), stream);
    for (const StateEntry& e : model.state_dict()) {
      if (e.kind == StateEntry::Kind::Parameter) {
        const layers::Parameter& p = model.parameters()[e.index];
        records.push_back({kEmaPrefix + e.name, dtype, p.value.shape(),
                           host_bytes(ema_params.flat_range(p.offset, p.value.shape()))});
      } else if (e.kind == StateEntry::Kind::Buffer) {
        const layers::Buffer& b = model.buffers()[e.index];
        records.push_back({kEmaPrefix + e.name, dtype, b.value.shape(),
                           host_bytes(ema_buffers.flat_range(b.offset, b.value.shape()))});
      }
    }
  }

  std::map<std::string, std::string> metadata = state.extra;
  metadata["format"] = kCheckpointFormat;
  metadata["model"] = model.name();
  metadata["epoch"] = std::to_string(state.epoch);
  metadata["step"] = std::to_string(state.step);
  metadata["seed"] = std::to_string(state.seed);
  metadata["dropout_offset"] = std::to_string(state.dropout_offset);
  metadata["sampler_seed"] = std::to_string(state.sampler_seed);
  metadata["sampler_epoch"] = std::to_string(state.sampler_epoch);
  metadata["sampler_position"] = std::to_string(state.sampler_position);
  // The data block is the records' bytes in this order (write_safetensors): checksum it as it will be read.
  std::uint32_t data_crc = 0;
  std::size_t offset = 0;
  std::map<std::string, SafetensorsFile::Entry> entries;
  for (const TensorRecord& r : records) {
    entries[r.name] = {r.dtype, r.shape, offset, offset + r.bytes.size()};
    offset += r.bytes.size();
    data_crc = crc32_of(data_crc, r.bytes);
  }
  metadata[kChecksumKey] = hex32(checkpoint_crc(data_crc, entries, metadata));
  write_safetensors(path, records, metadata, options);
}

LoadedCheckpoint load_checkpoint(const std::string& path, Model& model, Sgd* sgd, WeightAverage* ema) {
  ENGINE_CHECK(model.finalized(), "load_checkpoint '{}': model '{}' is not finalized", path, model.name());
  const SafetensorsFile file = SafetensorsFile::read(path);
  const bool checksum_verified = verify_checkpoint_checksum(file);
  const auto& meta = file.metadata();
  if (const auto it = meta.find("model"); it != meta.end()) {
    ENGINE_CHECK(it->second == model.name(), "checkpoint '{}' is of model '{}', not '{}'", path, it->second,
                 model.name());
  }
  const std::string dtype = safetensors_dtype(model.context().dtype);

  // 1. Validate everything.
  std::set<std::string> expected;
  for (const StateEntry& e : model.state_dict()) {
    expected.insert(e.name);
    if (e.kind == StateEntry::Kind::Counter) {
      check_entry(file, e.name, file.find(e.name), "I64", {}, model);
    } else {
      check_entry(file, e.name, file.find(e.name), dtype, entry_tensor(model, e).shape(), model);
    }
  }
  std::size_t momentum_entries = 0, ema_entries = 0, float_entries = 0;
  for (const StateEntry& e : model.state_dict()) float_entries += e.kind != StateEntry::Kind::Counter ? 1 : 0;
  for (const auto& [name, entry] : file.entries()) {
    if (name.rfind(kMomentumPrefix, 0) == 0) {
      ++momentum_entries;
      continue;
    }
    if (name.rfind(kEmaPrefix, 0) == 0) {
      ENGINE_CHECK(expected.count(name.substr(std::string(kEmaPrefix).size())) == 1,
                   "checkpoint '{}' holds an average '{}' of a tensor model '{}' does not have", path, name,
                   model.name());
      ++ema_entries;
      continue;
    }
    ENGINE_CHECK(
        expected.count(name) == 1,
        "checkpoint '{}' holds tensor '{}', which model '{}' does not have (a checkpoint of another model?)",
        path, name, model.name());
  }
  const bool load_momentum = sgd != nullptr && sgd->momentum_buffer().defined() && momentum_entries > 0;
  if (load_momentum) {
    ENGINE_CHECK(momentum_entries == model.parameters().size(),
                 "checkpoint '{}' holds {} momentum buffers for {} parameters", path, momentum_entries,
                 model.parameters().size());
    for (const layers::Parameter& p : model.parameters()) {
      const std::string name = kMomentumPrefix + p.name;
      check_entry(file, name, file.find(name), dtype, p.value.shape(), model);
    }
  }
  const bool load_ema = ema != nullptr && ema_entries > 0;
  if (load_ema) {
    ENGINE_CHECK(ema_entries == float_entries,
                 "checkpoint '{}' holds the average of {} tensors; model '{}' has {} parameters and buffers",
                 path, ema_entries, model.name(), float_entries);
    for (const StateEntry& e : model.state_dict()) {
      if (e.kind == StateEntry::Kind::Counter) continue;
      const std::string name = kEmaPrefix + e.name;
      check_entry(file, name, file.find(name), dtype, entry_tensor(model, e).shape(), model);
    }
  }
  LoadedCheckpoint out;
  out.checksum_verified = checksum_verified;
  out.has_training_state = meta.count("format") == 1 && meta.at("format") == kCheckpointFormat;
  if (out.has_training_state) {
    out.state.epoch = static_cast<std::int64_t>(metadata_u64(file, "epoch"));
    out.state.step = static_cast<std::int64_t>(metadata_u64(file, "step"));
    out.state.seed = metadata_u64(file, "seed");
    out.state.dropout_offset = metadata_u64(file, "dropout_offset");
    out.state.sampler_seed = metadata_u64(file, "sampler_seed");
    out.state.sampler_epoch = metadata_u64(file, "sampler_epoch");
    out.state.sampler_position = metadata_u64(file, "sampler_position");  // absent before mid-epoch saves: 0
    for (const auto& [k, v] : meta) {
      if (k != "format" && k != "model" && k != "epoch" && k != "step" && k != "seed" &&
          k != "dropout_offset" && k != "sampler_seed" && k != "sampler_epoch" && k != "sampler_position" &&
          k != kChecksumKey) {
        out.state.extra[k] = v;
      }
    }
  }

  // 2. Apply.
  void* stream = model.context().stream;
  for (const StateEntry& e : model.state_dict()) {
    const std::span<const std::uint8_t> bytes = file.bytes(*file.find(e.name));
    if (e.kind == StateEntry::Kind::Counter) {
      std::memcpy(model.counters()[e.index].value, bytes.data(), 8);
    } else {
      copy_into(entry_tensor(model, e), bytes, stream);
    }
  }
  model.parameters_written();  // bf16 autocast: the mirror follows the loaded fp32 weights
  if (load_momentum) {
    for (const layers::Parameter& p : model.parameters()) {
      copy_into(sgd->momentum_buffer().flat_range(p.offset, p.value.shape()),
                file.bytes(*file.find(kMomentumPrefix + p.name)), stream);
    }
    sgd->set_has_momentum_state(true);
    out.restored_momentum = true;
  }
  if (load_ema) {
    for (const StateEntry& e : model.state_dict()) {
      if (e.kind == StateEntry::Kind::Counter) continue;
      const bool is_param = e.kind == StateEntry::Kind::Parameter;
      const Tensor& flat = is_param ? ema->parameters() : ema->buffers();
      const Tensor& like = entry_tensor(model, e);
      const std::int64_t offset =
          is_param ? model.parameters()[e.index].offset : model.buffers()[e.index].offset;
      copy_into(flat.flat_range(offset, like.shape()), file.bytes(*file.find(kEmaPrefix + e.name)), stream);
    }
    ema->set_initialized(true);
    out.restored_ema = true;
  }
  if (sgd != nullptr) sgd->set_steps(out.state.step);
  return out;
}

}  // namespace engine::optim
