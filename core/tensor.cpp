#include "core/tensor.h"

#include <algorithm>
#include <cstring>

#include <fmt/ranges.h>

#include "core/allocator.h"

#if ENGINE_HAVE_CUDA
#include "core/cuda_check.h"
#endif

namespace engine {

std::int64_t shape_numel(const Shape& shape) {
  std::int64_t n = 1;
  for (std::int64_t d : shape) n *= d;
  return n;
}

std::string shape_str(const Shape& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

namespace {

Allocator& allocator_for(Device device, bool pinned) {
  if (device.is_cuda()) return device_allocator(device.index);
  return pinned ? pinned_allocator() : cpu_allocator();
}

void check_shape(const Shape& shape) {
  for (std::int64_t d : shape) ENGINE_CHECK(d >= 0, "negative dimension in shape {}", shape_str(shape));
}

void check_layout(const Shape& shape, Layout layout, Device device) {
  ENGINE_CHECK(layout == Layout::NCHW || shape.size() == 4,
               "the {} layout is for 4-d tensors [N, C, H, W], not shape {}", layout_name(layout),
               shape_str(shape));
  if (!is_blocked(layout)) return;
  ENGINE_CHECK(device.is_cpu(), "the {} layout is for CPU tensors, not one on {}", layout_name(layout),
               device.str());
  ENGINE_CHECK(shape[1] % layout_block(layout) == 0,
               "the {} layout holds whole blocks of {} channels, not the {} of shape {}", layout_name(layout),
               layout_block(layout), shape[1], shape_str(shape));
}

}  // namespace

Storage::Storage(std::size_t bytes, Device device, bool pinned, void* stream)
    : allocator_(&allocator_for(device, pinned)), bytes_(bytes), device_(device), pinned_(pinned) {
  data_ = allocator_->allocate(bytes, stream);
}

Storage::~Storage() { allocator_->deallocate(data_); }

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device, void* stream, Layout layout) {
  check_shape(shape);
  check_layout(shape, layout, device);
  Tensor t;
  t.shape_ = shape;
  t.dtype_ = dtype;
  t.layout_ = layout;
  t.storage_ = std::make_shared<Storage>(t.nbytes(), device, /*pinned=*/false, stream);
  return t;
}

Tensor Tensor::empty_pinned(const Shape& shape, DType dtype) {
  check_shape(shape);
  Tensor t;
  t.shape_ = shape;
  t.dtype_ = dtype;
  t.storage_ = std::make_shared<Storage>(t.nbytes(), Device::cpu(), /*pinned=*/true, nullptr);
  return t;
}

Tensor Tensor::zeros(const Shape& shape, DType dtype, Device device, void* stream, Layout layout) {
  Tensor t = empty(shape, dtype, device, stream, layout);
  t.fill_bytes(0, stream);
  return t;
}

std::int64_t Tensor::dim(int i) const {
  const int n = ndim();
  const int j = i < 0 ? i + n : i;
  ENGINE_CHECK(j >= 0 && j < n, "dimension {} out of range for {}", i, str());
  return shape_[static_cast<std::size_t>(j)];
}

void* Tensor::raw_data() const {
  ENGINE_CHECK(defined(), "access to an undefined tensor");
  return static_cast<char*>(storage_->data()) + offset_bytes_;
}

Tensor Tensor::view(const Shape& shape) const {
  check_shape(shape);
  ENGINE_CHECK(shape_numel(shape) == numel(), "cannot view {} as {}", str(), shape_str(shape));
  ENGINE_CHECK(layout_ == Layout::NCHW || shape == shape_,
               "cannot view {} as {}: its elements are in {} order; transpose it to NCHW first", str(),
               shape_str(shape), layout_name(layout_));
  Tensor t = *this;
  t.shape_ = shape;
  return t;
}

Tensor Tensor::slice(std::int64_t begin, std::int64_t end) const {
  ENGINE_CHECK(ndim() >= 1 && 0 <= begin && begin <= end && end <= shape_[0], "slice [{}, {}) of {}", begin,
               end, str());
  const std::int64_t row = shape_[0] == 0 ? 0 : numel() / shape_[0];
  Tensor t = *this;
  t.shape_[0] = end - begin;
  t.offset_bytes_ += static_cast<std::size_t>(begin * row) * dtype_size(dtype_);
  return t;
}

Tensor Tensor::flat_range(std::int64_t offset, const Shape& shape) const {
  check_shape(shape);
  ENGINE_CHECK(layout_ == Layout::NCHW, "flat_range of {}: its elements are in {} order", str(),
               layout_name(layout_));
  ENGINE_CHECK(offset >= 0 && offset + shape_numel(shape) <= numel(),
               "flat_range at {} of shape {} exceeds {}", offset, shape_str(shape), str());
  Tensor t = *this;
  t.shape_ = shape;
  t.offset_bytes_ += static_cast<std::size_t>(offset) * dtype_size(dtype_);
  return t;
}

void Tensor::copy_from(const Tensor& src, void* stream) {
  ENGINE_CHECK(defined() && src.defined(), "copy between undefined tensors");
  ENGINE_CHECK(dtype_ == src.dtype_ && numel() == src.numel(),
               "copy from {} into {}: dtype and size must match", src.str(), str());
  ENGINE_CHECK(layout_ == src.layout_, "copy from {} into {}: the layouts differ (transpose instead)",
               src.str(), str());
  if (nbytes() == 0) return;
  if (device().is_cpu() && src.device().is_cpu()) {
    std::memmove(raw_data(), src.raw_data(), nbytes());
    return;
  }
#if ENGINE_HAVE_CUDA
  auto s = static_cast<cudaStream_t>(stream);
  CUDA_CHECK(cudaMemcpyAsync(raw_data(), src.raw_data(), nbytes(), cudaMemcpyDefault, s));
  const bool pageable = (device().is_cpu() && !is_pinned()) || (src.device().is_cpu() && !src.is_pinned());
  if (pageable) CUDA_CHECK(cudaStreamSynchronize(s));
#else
  (void)stream;
  ENGINE_FAIL("copy from {} into {} needs CUDA, and this build has none", src.str(), str());
#endif
}

Tensor Tensor::to(Device device, void* stream) const {
  Tensor t = empty(shape_, dtype_, device, stream, layout_);
  t.copy_from(*this, stream);
#if ENGINE_HAVE_CUDA
  if (device.is_cpu() && is_cuda()) CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)));
#endif
  return t;
}

void Tensor::fill_bytes(std::uint8_t value, void* stream) {
  if (nbytes() == 0) return;
  if (device().is_cpu()) {
    std::memset(raw_data(), value, nbytes());
    return;
  }
#if ENGINE_HAVE_CUDA
  CUDA_CHECK(cudaMemsetAsync(raw_data(), value, nbytes(), static_cast<cudaStream_t>(stream)));
#else
  (void)stream;
#endif
}

std::string Tensor::str() const {
  if (!defined()) return "undefined tensor";
  const std::string layout = layout_ == Layout::NCHW ? "" : fmt::format(" {}", layout_name(layout_));
  return fmt::format("{}{}{} on {}", dtype_name(dtype_), shape_str(shape_), layout, device().str());
}

}  // namespace engine
