#pragma once
// Tensor: a shape, an element type, a device, and a slice of reference-counted contiguous storage.
//
// Every tensor is contiguous: row-major (Layout::NCHW, every rank), or, for a 4-d tensor only, channels last
// (Layout::NHWC: the shape stays the logical [N, C, H, W], the memory order is N, H, W, C), or on the CPU
// oneDNN's blocked nChw8c/nChw16c (core/layout.h).
// Views (view, slice, flat_range) share the storage of the tensor they come from; this is how a model's
// parameters are slices of one flat parameter buffer and DDP's gradient buckets are slices of one flat
// gradient buffer, with nothing copied. Of an NHWC tensor, only the views that keep the memory order
// meaningful are allowed: slices along N (they keep NHWC) and a view to its own shape; reshaping its
// elements in memory order would mix channels and pixels, so it is refused (transpose to NCHW first:
// kernels/ops/transpose.h).
//
// Streams are passed as `void*` (a cudaStream_t; nullptr = the legacy default stream) so that this header
// needs no CUDA headers and serves CPU-only builds too.

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/allocator.h"
#include "core/device.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/layout.h"

namespace engine {

using Shape = std::vector<std::int64_t>;

std::int64_t shape_numel(const Shape& shape);
std::string shape_str(const Shape& shape);  // "[3, 5, 7, 9]"

// Owns one allocation and gives it back to its allocator when the last tensor using it is gone.
class Storage {
 public:
  Storage(std::size_t bytes, Device device, bool pinned, void* stream);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  std::size_t bytes() const { return bytes_; }
  Device device() const { return device_; }
  bool pinned() const { return pinned_; }

 private:
  Allocator* allocator_;  // looked up once: the free needs no device query
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
  Device device_;
  bool pinned_ = false;
};

class Tensor {
 public:
  Tensor() = default;  // undefined: no storage

  // Uninitialized memory. Device memory comes from the caching allocator, tagged with `stream`. `layout`
  // NHWC is for 4-d shapes only (throws otherwise).
  static Tensor empty(const Shape& shape, DType dtype, Device device = Device::cpu(), void* stream = nullptr,
                      Layout layout = Layout::NCHW);
  // Page-locked host memory, for asynchronous copies to and from a GPU.
  static Tensor empty_pinned(const Shape& shape, DType dtype);
  static Tensor zeros(const Shape& shape, DType dtype, Device device = Device::cpu(), void* stream = nullptr,
                      Layout layout = Layout::NCHW);
  // A CPU tensor holding a copy of `values`.
  template <typename T>
  static Tensor from_vector(const std::vector<T>& values, const Shape& shape);

  bool defined() const { return storage_ != nullptr; }
  const Shape& shape() const { return shape_; }
  int ndim() const { return static_cast<int>(shape_.size()); }
  std::int64_t dim(int i) const;  // negative i counts from the end
  std::int64_t numel() const { return shape_numel(shape_); }
  std::size_t nbytes() const { return static_cast<std::size_t>(numel()) * dtype_size(dtype_); }
  DType dtype() const { return dtype_; }
  Layout layout() const { return layout_; }
  Device device() const { return storage_ ? storage_->device() : Device::cpu(); }
  bool is_cuda() const { return device().is_cuda(); }
  bool is_pinned() const { return storage_ && storage_->pinned(); }

  void* raw_data() const;
  template <typename T>
  T* data() const {
    ENGINE_CHECK(dtype_of<T>::value == dtype_, "tensor {} accessed as {}", str(),
                 dtype_name(dtype_of<T>::value));
    return static_cast<T*>(raw_data());
  }

  // Views sharing this tensor's storage (NCHW; of an NHWC tensor see the header comment).
  Tensor view(const Shape& shape) const;                             // same number of elements
  Tensor slice(std::int64_t begin, std::int64_t end) const;          // rows [begin, end) of dimension 0
  Tensor flat_range(std::int64_t offset, const Shape& shape) const;  // elements [offset, offset+numel)
  bool shares_storage_with(const Tensor& other) const { return storage_ && storage_ == other.storage_; }

  // Copies `src` (same dtype, layout and element count, any devices) into this tensor. Copies that touch
  // pageable host memory complete before returning; device-to-device and pinned copies are queued on
  // `stream` and complete in stream order.
  void copy_from(const Tensor& src, void* stream = nullptr);
  // A copy on `device`; a copy to the host is complete on return.
  Tensor to(Device device, void* stream = nullptr) const;
  // Sets every byte to `value` (0xFF makes float NaNs: the poison tests put in outputs before a call).
  void fill_bytes(std::uint8_t value, void* stream = nullptr);

  // CPU tensors only: a std::vector copy of the elements.
  template <typename T>
  std::vector<T> to_vector() const;

  std::string str() const;  // "float32[3, 5, 7, 9] on cuda:0", "float32[3, 5, 7, 9] NHWC on cuda:0"

 private:
  std::shared_ptr<Storage> storage_;
  std::size_t offset_bytes_ = 0;
  Shape shape_;
  DType dtype_ = DType::F32;
  Layout layout_ = Layout::NCHW;
};

template <typename T>
Tensor Tensor::from_vector(const std::vector<T>& values, const Shape& shape) {
  ENGINE_CHECK(shape_numel(shape) == static_cast<std::int64_t>(values.size()),
               "from_vector: {} values for shape {}", values.size(), shape_str(shape));
  Tensor t = empty(shape, dtype_of<T>::value);  // NCHW
  std::copy(values.begin(), values.end(), t.data<T>());
  return t;
}

template <typename T>
std::vector<T> Tensor::to_vector() const {
  ENGINE_CHECK(device().is_cpu(), "to_vector on {}: copy it to the CPU first", str());
  const T* p = data<T>();
  return std::vector<T>(p, p + numel());
}

}  // namespace engine
