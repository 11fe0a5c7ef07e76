#include "dist/sync_batchnorm.h"

#include <cmath>
#include <vector>

#include "core/error.h"
#include "kernels/cuda/sync_batchnorm.h"  // declared in every build (kernels/cuda_api.h)
#include "kernels/ops/dispatch.h"         // data_or_null, check_same_layout

namespace engine::dist {
namespace {

// Where element (n, c, i) of x [N, C, H*W] lives (core/layout.h): n * n_stride + (c / block) * c_stride +
// c % block + i * i_stride, that is (n * C + c) * HW + i in NCHW, (n * HW + i) * C + c in NHWC and
// ((n * C/b + c/b) * HW + i) * b + c%b in the blocked nChw8c/nChw16c (block 1 for the first two). Every loop
// below walks a channel n outer, i inner whatever the layout, so its values are added in the same order and
// an NHWC or blocked run gives the bits of the NCHW run on the same logical data.
struct Geometry {
  std::int64_t n, c, hw;
  std::int64_t n_stride, c_stride, i_stride, block;

  std::int64_t at(std::int64_t img, std::size_t channel, std::int64_t i) const {
    const auto ch = static_cast<std::int64_t>(channel);
    return img * n_stride + ch / block * c_stride + ch % block + i * i_stride;
  }
};

Geometry geometry_of(const Tensor& x) {
  ENGINE_CHECK(x.ndim() == 4, "SyncBatchNorm expects an input [N, C, H, W], got {}", x.str());
  const std::int64_t n = x.dim(0), c = x.dim(1), hw = x.dim(2) * x.dim(3);
  if (x.layout() == Layout::NHWC) return {n, c, hw, hw * c, 1, c, 1};
  if (const std::int64_t b = layout_block(x.layout()); b != 0) return {n, c, hw, c * hw, hw * b, b, b};
  return {n, c, hw, c * hw, hw, 1, 1};
}

// A host view of `t`: itself on the CPU, else a copy made after the work queued on `stream`.
Tensor host(const Tensor& t, void* stream) {
  if (!t.defined() || t.device().is_cpu()) return t;
  return t.to(Device::cpu(), stream);
}
void write_back(const Tensor& dst, const Tensor& src, void* stream) {
  if (dst.defined() && !dst.shares_storage_with(src)) Tensor(dst).copy_from(src, stream);
}

// The collective's tensor: host memory for gloo, the data's device for NCCL.
Tensor all_reduce_f64(ProcessGroup& pg, const std::vector<double>& values, Device device, void* stream) {
  Tensor t = Tensor::from_vector(values, {static_cast<std::int64_t>(values.size())});
  if (pg.backend_kind() == Backend::Nccl) {
    Tensor d = t.to(device, stream);
    pg.all_reduce(d, ReduceOp::Sum, stream);
    return d.to(Device::cpu(), stream);
  }
  pg.all_reduce(t, ReduceOp::Sum, stream);
  return t;
}

Tensor all_gather_f64(ProcessGroup& pg, const std::vector<double>& values, Device device, void* stream) {
  const auto n = static_cast<std::int64_t>(values.size());
  Tensor in = Tensor::from_vector(values, {n});
  const bool nccl = pg.backend_kind() == Backend::Nccl;
  const Device dev = nccl ? device : Device::cpu();
  Tensor out = Tensor::empty({n * pg.world_size()}, DType::F64, dev, stream);
  pg.all_gather(nccl ? in.to(dev, stream) : in, out, stream);
  return nccl ? out.to(Device::cpu(), stream) : out;
}

template <typename T>
void forward(ProcessGroup& pg, const Geometry& g, Device device, void* stream, const T* x, const T* gamma,
             const T* beta, T* y, T* save_mean, T* save_invstd, T* running_mean, T* running_var,
             double momentum, double eps) {
  const auto C = static_cast<std::size_t>(g.c);
  const double local_count = static_cast<double>(g.n * g.hw);
  // [count, mean[C], M2[C]] of this rank.
  std::vector<double> local(1 + 2 * C, 0.0);
  local[0] = local_count;
  for (std::size_t c = 0; c < C; ++c) {
    double sum = 0.0;
    for (std::int64_t n = 0; n < g.n; ++n) {
      const T* p = x + g.at(n, c, 0);
      for (std::int64_t i = 0; i < g.hw; ++i) sum += static_cast<double>(p[i * g.i_stride]);
    }
    const double mean = local_count > 0 ? sum / local_count : 0.0;
    double m2 = 0.0;
    for (std::int64_t n = 0; n < g.n; ++n) {
      const T* p = x + g.at(n, c, 0);
      for (std::int64_t i = 0; i < g.hw; ++i) {
        const double d = static_cast<double>(p[i * g.i_stride]) - mean;
        m2 += d * d;
      }
    }
    local[1 + c] = mean;
    local[1 + C + c] = m2;
  }
  const Tensor gathered = all_gather_f64(pg, local, device, stream);
  const double* all = gathered.data<double>();
  const std::size_t stride = local.size();
  // Chan's pairwise combination, in rank order.
  std::vector<double> mean(C, 0.0), m2(C, 0.0);
  double count = 0.0;
  for (int r = 0; r < pg.world_size(); ++r) {
    const double* s = all + static_cast<std::size_t>(r) * stride;
    const double nb = s[0];
    if (nb <= 0.0) continue;
    const double nab = count + nb;
    for (std::size_t c = 0; c < C; ++c) {
      const double delta = s[1 + c] - mean[c];
      mean[c] += delta * nb / nab;
      m2[c] += s[1 + C + c] + delta * delta * count * nb / nab;
    }
    count = nab;
  }
  ENGINE_CHECK(count > 1.0, "SyncBatchNorm: expected more than 1 value per channel over all ranks, got {}",
               count);
  for (std::size_t c = 0; c < C; ++c) {
    const double var = m2[c] / count;
    const double invstd = 1.0 / std::sqrt(var + eps);
    save_mean[c] = static_cast<T>(mean[c]);
    save_invstd[c] = static_cast<T>(invstd);
    const double scale = static_cast<double>(gamma[c]) * invstd;
    const double shift = static_cast<double>(beta[c]);
    for (std::int64_t n = 0; n < g.n; ++n) {
      const std::int64_t base = g.at(n, c, 0);
      for (std::int64_t i = 0; i < g.hw; ++i) {
        const std::int64_t at = base + i * g.i_stride;
        y[at] = static_cast<T>((static_cast<double>(x[at]) - mean[c]) * scale + shift);
      }
    }
    if (running_mean != nullptr) {
      running_mean[c] =
          static_cast<T>((1.0 - momentum) * static_cast<double>(running_mean[c]) + momentum * mean[c]);
      running_var[c] = static_cast<T>((1.0 - momentum) * static_cast<double>(running_var[c]) +
                                      momentum * m2[c] / (count - 1.0));
    }
  }
}

template <typename T>
void backward(ProcessGroup& pg, const Geometry& g, Device device, void* stream, const T* x, const T* gamma,
              const T* save_mean, const T* save_invstd, const T* dy, T* dx, T* dgamma, T* dbeta) {
  const auto C = static_cast<std::size_t>(g.c);
  // [sum dy[C], sum dy*xhat[C], count]
  std::vector<double> local(2 * C + 1, 0.0);
  for (std::size_t c = 0; c < C; ++c) {
    const double mean = static_cast<double>(save_mean[c]);
    const double invstd = static_cast<double>(save_invstd[c]);
    double sdy = 0.0, sdyx = 0.0;
    for (std::int64_t n = 0; n < g.n; ++n) {
      const std::int64_t base = g.at(n, c, 0);
      for (std::int64_t i = 0; i < g.hw; ++i) {
        const std::int64_t at = base + i * g.i_stride;
        const double d = static_cast<double>(dy[at]);
        sdy += d;
        sdyx += d * (static_cast<double>(x[at]) - mean) * invstd;
      }
    }
    local[c] = sdy;
    local[C + c] = sdyx;
    dbeta[c] = static_cast<T>(sdy);
    dgamma[c] = static_cast<T>(sdyx);
  }
  local[2 * C] = static_cast<double>(g.n * g.hw);
  const Tensor reduced = all_reduce_f64(pg, local, device, stream);
  if (dx == nullptr) return;
  const double* all = reduced.data<double>();
  const double count = all[2 * C];
  for (std::size_t c = 0; c < C; ++c) {
    const double mean = static_cast<double>(save_mean[c]);
    const double invstd = static_cast<double>(save_invstd[c]);
    const double k = static_cast<double>(gamma[c]) * invstd;
    const double mdy = all[c] / count, mdyx = all[C + c] / count;
    for (std::int64_t n = 0; n < g.n; ++n) {
      const std::int64_t base = g.at(n, c, 0);
      for (std::int64_t i = 0; i < g.hw; ++i) {
        const std::int64_t at = base + i * g.i_stride;
        const double xhat = (static_cast<double>(x[at]) - mean) * invstd;
        dx[at] = static_cast<T>(k * (static_cast<double>(dy[at]) - mdy - xhat * mdyx));
      }
    }
  }
}

// The device path (kernels/cuda/sync_batchnorm.h): local moments, one collective on `stream`, global stage.
// Work::wait returns at once for NCCL (stream-ordered) and after the host copies for gloo: no host
// synchronization with NCCL. The scratch tensors come from the caching allocator on `stream`, so their
// memory is not reused before the stream has passed the collective. The kernels are called in
// `if constexpr (kHaveCuda)` branches: CPU-only builds discard them and need no definitions.
BatchNorm2dShape device_shape(const Tensor& x) {
  ENGINE_CHECK(x.dtype() == DType::F32, "SyncBatchNorm on CUDA runs float32, not {}", dtype_name(x.dtype()));
  return {static_cast<int>(x.dim(0)), static_cast<int>(x.dim(1)), static_cast<int>(x.dim(2)),
          static_cast<int>(x.dim(3))};
}

void forward_cuda(ProcessGroup& pg, const Tensor& x, const Tensor& gamma, const Tensor& beta, const Tensor& y,
                  const Tensor& save_mean, const Tensor& save_invstd, const Tensor& running_mean,
                  const Tensor& running_var, double momentum, double eps, void* stream) {
  const BatchNorm2dShape s = device_shape(x);
  if constexpr (kHaveCuda) {
    const auto st = static_cast<cudaStream_t>(stream);
    const std::int64_t size = cuda::sync_batchnorm_moments_size(s.c);
    const Tensor local = Tensor::empty({size}, DType::F64, x.device(), stream);
    const Tensor gathered = Tensor::empty({size * pg.world_size()}, DType::F64, x.device(), stream);
    cuda::sync_batchnorm_local_moments(st, s, x.data<float>(), local.data<double>(), x.layout());
    pg.all_gather_async(local, gathered, stream)->wait();
    cuda::sync_batchnorm_forward_global(st, s, gathered.data<double>(), pg.world_size(), x.data<float>(),
                                        gamma.data<float>(), beta.data<float>(), y.data<float>(),
                                        save_mean.data<float>(), save_invstd.data<float>(),
                                        ops::data_or_null<float>(running_mean),
                                        ops::data_or_null<float>(running_var), momentum, eps, x.layout());
  } else {
    ENGINE_FAIL("SyncBatchNorm forward: a CUDA tensor {}, but this build has no CUDA device", x.str());
  }
}

void backward_cuda(ProcessGroup& pg, const Tensor& x, const Tensor& gamma, const Tensor& save_mean,
                   const Tensor& save_invstd, const Tensor& dy, const Tensor& dx, const Tensor& dgamma,
                   const Tensor& dbeta, void* stream) {
  const BatchNorm2dShape s = device_shape(x);
  if constexpr (kHaveCuda) {
    const auto st = static_cast<cudaStream_t>(stream);
    const Tensor local =
        Tensor::empty({cuda::sync_batchnorm_grad_sums_size(s.c)}, DType::F64, x.device(), stream);
    cuda::sync_batchnorm_local_grad_sums(st, s, x.data<float>(), dy.data<float>(), save_mean.data<float>(),
                                         save_invstd.data<float>(), local.data<double>(),
                                         dgamma.data<float>(), dbeta.data<float>(), x.layout());
    pg.all_reduce_async(local, ReduceOp::Sum, stream)->wait();
    cuda::sync_batchnorm_backward_global(st, s, local.data<double>(), x.data<float>(),
                                         ops::data_or_null<float>(gamma), save_mean.data<float>(),
                                         save_invstd.data<float>(), dy.data<float>(),
                                         ops::data_or_null<float>(dx), x.layout());
  } else {
    ENGINE_FAIL("SyncBatchNorm backward: a CUDA tensor {}, but this build has no CUDA device", x.str());
  }
}

template <typename Fn>
void with_scalar(DType dt, Fn&& fn) {
  if (dt == DType::F64) {
    fn.template operator()<double>();
  } else {
    ENGINE_CHECK(dt == DType::F32, "SyncBatchNorm runs float32 and float64, not {}", dtype_name(dt));
    fn.template operator()<float>();
  }
}

}  // namespace

void sync_batchnorm_forward_training(ProcessGroup& pg, const Tensor& x, const Tensor& gamma,
                                     const Tensor& beta, const Tensor& y, const Tensor& save_mean,
                                     const Tensor& save_invstd, const Tensor& running_mean,
                                     const Tensor& running_var, double momentum, double eps, void* stream) {
  const Geometry g = geometry_of(x);
  ops::check_same_layout("SyncBatchNorm forward", {{"x", x}, {"y", y}});
  ENGINE_CHECK(gamma.numel() == g.c && beta.numel() == g.c && save_mean.numel() == g.c &&
                   save_invstd.numel() == g.c && y.shape() == x.shape(),
               "SyncBatchNorm forward: parameters must have {} elements and y the shape of x {}", g.c,
               x.str());
  if (x.is_cuda()) {
    forward_cuda(pg, x, gamma, beta, y, save_mean, save_invstd, running_mean, running_var, momentum, eps,
                 stream);
    return;
  }
  const Tensor hx = host(x, stream), hg = host(gamma, stream), hb = host(beta, stream), hy = host(y, stream);
  const Tensor hm = host(save_mean, stream), hi = host(save_invstd, stream);
  const Tensor hrm = host(running_mean, stream), hrv = host(running_var, stream);
  with_scalar(x.dtype(), [&]<typename T>() {
    forward<T>(pg, g, x.device(), stream, hx.data<T>(), hg.data<T>(), hb.data<T>(), hy.data<T>(),
               hm.data<T>(), hi.data<T>(), hrm.defined() ? hrm.data<T>() : nullptr,
               hrv.defined() ? hrv.data<T>() : nullptr, momentum, eps);
  });
  write_back(y, hy, stream);
  write_back(save_mean, hm, stream);
  write_back(save_invstd, hi, stream);
  write_back(running_mean, hrm, stream);
  write_back(running_var, hrv, stream);
}

void sync_batchnorm_backward_training(ProcessGroup& pg, const Tensor& x, const Tensor& gamma,
                                      const Tensor& save_mean, const Tensor& save_invstd, const Tensor& dy,
                                      const Tensor& dx, const Tensor& dgamma, const Tensor& dbeta,
                                      void* stream) {
  const Geometry g = geometry_of(x);
  ops::check_same_layout("SyncBatchNorm backward", {{"x", x}, {"dy", dy}, {"dx", dx}});
  ENGINE_CHECK(dy.shape() == x.shape() && (!dx.defined() || dx.shape() == x.shape()) &&
                   dgamma.numel() == g.c && dbeta.numel() == g.c,
               "SyncBatchNorm backward: dy/dx must have the shape of x {} and dgamma/dbeta {} elements",
               x.str(), g.c);
  if (x.is_cuda()) {
    backward_cuda(pg, x, gamma, save_mean, save_invstd, dy, dx, dgamma, dbeta, stream);
    return;
  }
  const Tensor hx = host(x, stream), hg = host(gamma, stream), hm = host(save_mean, stream);
  const Tensor hi = host(save_invstd, stream), hdy = host(dy, stream), hdx = host(dx, stream);
  const Tensor hdg = host(dgamma, stream), hdb = host(dbeta, stream);
  with_scalar(x.dtype(), [&]<typename T>() {
    backward<T>(pg, g, x.device(), stream, hx.data<T>(), hg.data<T>(), hm.data<T>(), hi.data<T>(),
                hdy.data<T>(), hdx.defined() ? hdx.data<T>() : nullptr, hdg.data<T>(), hdb.data<T>());
  });
  write_back(dx, hdx, stream);
  write_back(dgamma, hdg, stream);
  write_back(dbeta, hdb, stream);
}

}  // namespace engine::dist
