#pragma once
// The one place where an op picks its implementation from the tensors and the ExecutionContext:
//   device  CUDA -> Path::Cuda (float32);  CPU float32 -> Path::CpuFast;  CPU float64 -> Path::CpuReference
//   dtype   F32, F64; BF16 on CUDA for the ops with bf16 kernels (dispatch_with_bf16, T = core/dtype.h's
//           bfloat16 on the host: the .cu files reinterpret it as __nv_bfloat16), and BF16 on the CPU
//           (Path::CpuFast, bfloat16) for those with CPU bf16 kernels too (dispatch_with_bf16<true>). A BF16
//           tensor anywhere else runs the float32 kernels on float32 copies first
//           (kernels/ops/bf16_storage.h).
//   layout  the tensors' own (core/layout.h): an op first calls `same_layout` on the tensors it takes
//           (mixed layouts are refused, naming the op and the tensors); a path with an NHWC kernel takes
//           NHWC tensors as they are, any other runs its NCHW kernel through kernels/ops/nchw_fallback.h
// Each op (kernels/ops/<op>.cpp) calls `dispatch` with a template lambda taking <Path, T> and calls the
// kernels/cpu, kernels/cpu_fast or kernels/cuda function of that path. An op without a fast float32 CPU
// kernel runs the reference's float instantiation under Path::CpuFast.

#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>

#include "core/dtype.h"
#include "core/error.h"
#include "core/execution_context.h"
#include "core/tensor.h"
#include "kernels/cuda_api.h"

namespace engine::ops {

enum class Path { CpuReference, CpuFast, Cuda };

// A tensor an op takes, named for messages ("x", "dy").
struct NamedTensor {
  const char* name;
  const Tensor& tensor;
};

[[noreturn]] inline void fail_mixed_layouts(const char* op, std::initializer_list<NamedTensor> tensors) {
  std::string all;
  for (const NamedTensor& t : tensors) {
    if (t.tensor.defined()) all += fmt::format("{}{} {}", all.empty() ? "" : ", ", t.name, t.tensor.str());
  }
  ENGINE_FAIL("{}: mixed layouts (NCHW and NHWC) among {}", op, all);
}

// The layout the op runs in: that of its 4-d tensors, which must all agree (undefined tensors and tensors of
// other ranks, such as per-channel parameters, are skipped). NCHW when there are none. Throws naming the op
// and every tensor otherwise.
inline Layout same_layout(const char* op, std::initializer_list<NamedTensor> tensors) {
  const Tensor* first = nullptr;
  for (const NamedTensor& t : tensors) {
    if (!t.tensor.defined() || t.tensor.ndim() != 4) continue;
    if (first == nullptr) first = &t.tensor;
    if (t.tensor.layout() != first->layout()) fail_mixed_layouts(op, tensors);
  }
  return first != nullptr ? first->layout() : Layout::NCHW;
}

// Elementwise ops (ReLU, dropout, add, scale, casts) run in memory order, so any layout works as long as
// every operand is in it: a 4-d NHWC operand next to an NCHW one of the same size would pair different
// elements. Throws naming the op and every tensor otherwise.
inline void check_same_layout(const char* op, std::initializer_list<NamedTensor> tensors) {
  const Tensor* first = nullptr;
  for (const NamedTensor& t : tensors) {
    if (!t.tensor.defined()) continue;
    if (first == nullptr) first = &t.tensor;
    if (t.tensor.layout() != first->layout()) fail_mixed_layouts(op, tensors);
  }
}

// Calls fn.template operator()<Path, T>() for the path and storage type of `t`.
template <typename Fn>
void dispatch(const char* op, const ExecutionContext& /*ctx*/, const Tensor& t, Fn&& fn) {
  if (t.is_cuda()) {
    if constexpr (kHaveCuda) {
      ENGINE_CHECK(t.dtype() == DType::F32, "{}: the CUDA device runs float32, not {}", op,
                   dtype_name(t.dtype()));
      fn.template operator()<Path::Cuda, float>();
      return;
    } else {
      ENGINE_FAIL("{}: a CUDA tensor, but this build has no CUDA device", op);
    }
  }
  switch (t.dtype()) {
    case DType::F32: fn.template operator()<Path::CpuFast, float>(); return;
    case DType::F64: fn.template operator()<Path::CpuReference, double>(); return;
    default: ENGINE_FAIL("{}: the CPU device runs float32 and float64, not {}", op, dtype_name(t.dtype()));
  }
}

// `dispatch`, and a BF16 CUDA tensor to fn.template operator()<Path::Cuda, bfloat16>(): for ops with a
// bf16 CUDA kernel (every tensor the lambda touches is then BF16: bf16::on_float32 with NativeBf16::Cuda
// sends every other mix to the float32 kernels first). With kCpuBf16 (ops with CPU bf16 kernels too,
// NativeBf16::CudaAndCpu) a BF16 CPU tensor goes to fn.template operator()<Path::CpuFast, bfloat16>().
template <bool kCpuBf16 = false, typename Fn>
void dispatch_with_bf16(const char* op, const ExecutionContext& ctx, const Tensor& t, Fn&& fn) {
  if constexpr (kHaveCuda) {
    if (t.is_cuda() && t.dtype() == DType::BF16) {
      fn.template operator()<Path::Cuda, bfloat16>();
      return;
    }
  }
  if constexpr (kCpuBf16) {
    if (!t.is_cuda() && t.dtype() == DType::BF16) {
      fn.template operator()<Path::CpuFast, bfloat16>();
      return;
    }
  }
  dispatch(op, ctx, t, std::forward<Fn>(fn));
}

inline cudaStream_t cuda_stream(const ExecutionContext& ctx) { return static_cast<cudaStream_t>(ctx.stream); }

// The context's cuDNN/cuBLAS handles bound to its stream (kernels/ops/cuda_handles.cpp, CUDA builds only:
// called only from Path::Cuda branches, which CPU-only builds discard).
cuda::CudaHandles& cuda_handles(const char* op, const ExecutionContext& ctx);
// Refuses a CUDA context without handles, or whose handles belong to another device or disagree with its
// allow_tf32 (CUDA builds only, like cuda_handles). `who` starts the message.
void check_cuda_context(const std::string& who, const ExecutionContext& ctx);

// Typed data of an optional tensor: null when it is undefined (no bias, no input gradient).
template <typename T>
T* data_or_null(const Tensor& t) {
  return t.defined() ? t.data<T>() : nullptr;
}

inline int to_int(std::int64_t v) { return static_cast<int>(v); }

}  // namespace engine::ops
