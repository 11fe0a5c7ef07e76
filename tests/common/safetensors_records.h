#pragma once
// A safetensors file's records built from tensors and a model's state dict, for the tests that hand the
// engine's results to a PyTorch script (scripts/*_torch_check.py). Owns copies of the bytes the records point
// into (a deque: adding never moves the earlier ones). Tensors are CPU tensors of float32, float64 or int32.

#include <cstdint>
#include <deque>
#include <span>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/tensor.h"
#include "layers/model.h"
#include "optim/safetensors.h"

namespace engine::testing {

struct SafetensorsRecords {
  std::deque<std::vector<std::uint8_t>> storage;
  std::vector<optim::TensorRecord> list;

  void add(const std::string& name, const std::string& dtype, const Shape& shape, const void* data,
           std::size_t bytes) {
    const auto* p = static_cast<const std::uint8_t*>(data);
    storage.emplace_back(p, p + bytes);
    list.push_back({name, dtype, shape, std::span<const std::uint8_t>(storage.back())});
  }
  void add(const std::string& name, const Tensor& t) {
    const char* dtype = t.dtype() == DType::F64   ? "F64"
                        : t.dtype() == DType::F32 ? "F32"
                        : t.dtype() == DType::I32 ? "I32"
                                                  : nullptr;
    ENGINE_CHECK(dtype != nullptr && t.device().is_cpu(),
                 "SafetensorsRecords: {} is not a CPU F32/F64/I32 tensor", t.str());
    add(name, dtype, t.shape(), t.raw_data(), static_cast<std::size_t>(t.nbytes()));
  }
  // The model's state dict (PyTorch's names) under `prefix`.
  void add_state(const std::string& prefix, const layers::Model& m) {
    for (const layers::StateEntry& e : m.state_dict()) {
      switch (e.kind) {
        case layers::StateEntry::Kind::Parameter: add(prefix + e.name, m.parameters()[e.index].value); break;
        case layers::StateEntry::Kind::Buffer: add(prefix + e.name, m.buffers()[e.index].value); break;
        case layers::StateEntry::Kind::Counter: {
          const std::int64_t v = *m.counters()[e.index].value;
          add(prefix + e.name, "I64", {}, &v, sizeof v);
          break;
        }
      }
    }
  }
};

}  // namespace engine::testing
