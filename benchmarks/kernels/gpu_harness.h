#pragma once
// kernel_bench's GPU side (CUDA builds only): one stream, fp32 and TF32 library handles, the ceilings
// measured in this run, and the timing loop.
//
// Timing (the method of llm.c's dev/cuda programs and of /work/.library/device/METHOD.md): `warmup` untimed
// runs (module load, cuDNN plan and algorithm choice, workspaces all happen there), then `repeats` runs, each
// preceded by a write of 2x the device's L2 size (cudaMemsetAsync on a scratch buffer, outside the timed
// region) so every run starts with a cold L2 and reads its inputs from device memory; each run is bracketed
// by its own pair of CUDA events; the median (and the minimum) of the per-run times are reported.

#include <cstdint>
#include <functional>
#include <vector>

#include <cuda_runtime_api.h>

#include "benchmarks/kernels/harness.h"
#include "core/stream.h"
#include "core/tensor.h"
#include "kernels/cuda/handles.h"

namespace engine::bench {

struct Timing {
  double median_ms = 0, min_ms = 0;
};

class GpuBench {
 public:
  explicit GpuBench(Report& report);
  GpuBench(const GpuBench&) = delete;
  GpuBench& operator=(const GpuBench&) = delete;

  Report& report() { return report_; }
  const Options& options() const { return report_.options(); }
  cudaStream_t stream() const { return stream_.get(); }
  cuda::CudaHandles& handles() { return handles_; }            // fp32 math (FMA; no TF32)
  cuda::CudaHandles& tf32_handles() { return tf32_handles_; }  // TF32 tensor cores allowed
  std::size_t device_memory_bytes() const { return total_memory_; }

  // Measures the copy bandwidth and the fp32 / TF32 / bf16 GEMM rates and stores them in the report.
  void measure_ceilings();

  // Times fn as described above. fn only queues work on stream().
  Timing time(const std::function<void()>& fn);
  // Times fn and adds `row` (its timing filled in) to the report.
  void time_row(Row row, const std::function<void()>& fn);

  // Device tensors on stream(); downloads synchronize.
  Tensor upload(const std::vector<float>& v, const Shape& shape);
  Tensor upload_i32(const std::vector<std::int32_t>& v, const Shape& shape);
  Tensor empty(const Shape& shape, DType dtype = DType::F32);
  Tensor poisoned(const Shape& shape);  // every byte 0xFF (NaN): an unwritten output fails the check
  std::vector<float> download(const Tensor& t);
  void synchronize() const { stream_.synchronize(); }

 private:
  Report& report_;
  Stream stream_;
  cuda::CudaHandles handles_;
  cuda::CudaHandles tf32_handles_;
  Tensor flush_;  // 2x L2
  std::size_t total_memory_ = 0;
  std::uint8_t flush_value_ = 0;
};

}  // namespace engine::bench
