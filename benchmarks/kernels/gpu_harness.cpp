#include "benchmarks/kernels/gpu_harness.h"

#include <algorithm>
#include <cstdio>

#include <cublas_v2.h>

#include "core/cuda_check.h"
#include "core/device.h"
#include "core/dtype.h"

namespace engine::bench {

namespace {

int select_device_zero() {
  ENGINE_CHECK(device_count() > 0, "kernel_bench: no CUDA device visible (use --smoke on a CPU machine)");
  set_device(0);
  return 0;
}

cuda::CudaHandlesOptions tf32_options() {
  cuda::CudaHandlesOptions o;
  o.allow_tf32 = true;
  o.allow_tf32_matmul = true;
  return o;
}

}  // namespace

GpuBench::GpuBench(Report& report)
    : report_(report),
      stream_(select_device_zero()),
      handles_(0, stream_.get()),
      tf32_handles_(0, stream_.get(), tf32_options()) {
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  total_memory_ = prop.totalGlobalMem;
  Ceilings c = report_.ceilings();
  c.device = prop.name;
  report_.set_ceilings(c);
  const std::int64_t flush_bytes = 2 * static_cast<std::int64_t>(std::max(prop.l2CacheSize, 1 << 20));
  flush_ = empty({flush_bytes}, DType::U8);
  std::printf(
      "kernel_bench: %s, %d SMs, L2 %d MB (flushed with a %lld MB write before every timed run), "
      "%.0f GB\n",
      prop.name, prop.multiProcessorCount, prop.l2CacheSize >> 20, static_cast<long long>(flush_bytes >> 20),
      static_cast<double>(prop.totalGlobalMem) / 1e9);
}

Timing GpuBench::time(const std::function<void()>& fn) {
  const Options& o = options();
  for (int i = 0; i < o.warmup; ++i) fn();
  const int n = std::max(1, o.repeats);
  std::vector<Event> start, stop;
  for (int i = 0; i < n; ++i) {
    start.emplace_back(true);
    stop.emplace_back(true);
  }
  for (int i = 0; i < n; ++i) {
    CUDA_CHECK(cudaMemsetAsync(flush_.raw_data(), ++flush_value_, flush_.nbytes(), stream()));
    start[static_cast<std::size_t>(i)].record(stream());
    fn();
    stop[static_cast<std::size_t>(i)].record(stream());
  }
  CUDA_CHECK(cudaGetLastError());
  stream_.synchronize();
  std::vector<double> ms;
  for (int i = 0; i < n; ++i) {
    const auto k = static_cast<std::size_t>(i);
    ms.push_back(static_cast<double>(stop[k].elapsed_ms_since(start[k])));
  }
  return {median(ms), *std::min_element(ms.begin(), ms.end())};
}

void GpuBench::time_row(Row row, const std::function<void()>& fn) {
  const Timing t = time(fn);
  row.median_ms = t.median_ms;
  row.min_ms = t.min_ms;
  report_.add(std::move(row));
}

Tensor GpuBench::upload(const std::vector<float>& v, const Shape& shape) {
  Tensor t = empty(shape);
  t.copy_from(Tensor::from_vector(v, shape), stream());
  return t;
}

Tensor GpuBench::upload_i32(const std::vector<std::int32_t>& v, const Shape& shape) {
  Tensor t = empty(shape, DType::I32);
  t.copy_from(Tensor::from_vector(v, shape), stream());
  return t;
}

Tensor GpuBench::empty(const Shape& shape, DType dtype) {
  return Tensor::empty(shape, dtype, Device::cuda(0), stream());
}

Tensor GpuBench::poisoned(const Shape& shape) {
  Tensor t = empty(shape);
  t.fill_bytes(0xFF, stream());
  return t;
}

std::vector<float> GpuBench::download(const Tensor& t) {
  const Tensor h = t.to(Device::cpu(), stream());
  return h.to_vector<float>();
}

// Ceilings: the same timing loop as every kernel, so the shares compare like with like.
void GpuBench::measure_ceilings() {
  Ceilings c = report_.ceilings();
  {
    // Copy: 512 MiB each way (far beyond L2); read + write bytes.
    const std::int64_t bytes = std::int64_t{512} << 20;
    Tensor a = empty({bytes}, DType::U8), b = empty({bytes}, DType::U8);
    a.fill_bytes(0x5A, stream());
    const Timing t = time([&] {
      CUDA_CHECK(cudaMemcpyAsync(b.raw_data(), a.raw_data(), static_cast<std::size_t>(bytes),
                                 cudaMemcpyDeviceToDevice, stream()));
    });
    c.copy_gb_s = 2.0 * static_cast<double>(bytes) / (t.median_ms * 1e-3) / 1e9;
  }
  {
    // GEMM: 8192^3 on random data (never zeros: they can run faster), column-major C = A B.
    const int n = 8192;
    const std::int64_t nn = std::int64_t{n} * n;
    const std::vector<float> ha = random_floats(nn, 11), hb = random_floats(nn, 12);
    Tensor a = upload(ha, {nn}), b = upload(hb, {nn}), cm = empty({nn});
    std::vector<bfloat16> ha16(ha.size()), hb16(hb.size());
    std::transform(ha.begin(), ha.end(), ha16.begin(), to_bfloat16);
    std::transform(hb.begin(), hb.end(), hb16.begin(), to_bfloat16);
    Tensor a16 = empty({nn}, DType::BF16), b16 = empty({nn}, DType::BF16), c16 = empty({nn}, DType::BF16);
    a16.copy_from(Tensor::from_vector(ha16, {nn}), stream());
    b16.copy_from(Tensor::from_vector(hb16, {nn}), stream());
    cublasHandle_t h = handles_.bind(stream()).cublas();
    const float one = 1.0f, zero = 0.0f;
    const double flops = 2.0 * n * static_cast<double>(n) * n;
    auto gemm = [&](const Tensor& A, const Tensor& B, Tensor& C, cudaDataType_t type,
                    cublasComputeType_t ct) {
      return time([&] {
        CUBLAS_CHECK(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, A.raw_data(), type, n,
                                  B.raw_data(), type, n, &zero, C.raw_data(), type, n, ct,
                                  CUBLAS_GEMM_DEFAULT));
      });
    };
    c.fp32_tflop_s = flops / (gemm(a, b, cm, CUDA_R_32F, CUBLAS_COMPUTE_32F).median_ms * 1e-3) / 1e12;
    c.tf32_tflop_s =
        flops / (gemm(a, b, cm, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32).median_ms * 1e-3) / 1e12;
    c.bf16_tflop_s = flops / (gemm(a16, b16, c16, CUDA_R_16BF, CUBLAS_COMPUTE_32F).median_ms * 1e-3) / 1e12;
  }
  report_.set_ceilings(c);
  std::printf(
      "ceilings: copy %.0f GB/s (read + write), SGEMM 8192^3 fp32 %.1f, tf32 %.1f, bf16 %.1f TFLOP/s\n",
      c.copy_gb_s, c.fp32_tflop_s, c.tf32_tflop_s, c.bf16_tflop_s);
}

}  // namespace engine::bench
