// Conv2d, the implicit-GEMM convolution (kernels/cuda/conv2d_implicit_gemm.h) against cuDNN (conv2d_cudnn.h)
// in fp32 (FMA math, the engine's default) and with TF32 tensor cores allowed, forward and backward (dx
// unless the layer is a model's first, dW, db when there is a bias), at every distinct convolution of vgg6,
// resnet18 and mnist_cnn at batch 128 and at one size that fills the GPU (resnet18's layer1 convolution at
// batch 512). Each geometry is first checked at batch 2 (batch 1 in --smoke) against kernels/cpu/conv2d.h in
// double. FLOPs: benchmarks/common/layer_costs.h (2 per multiply-add); the rate is a share of the measured
// fp32 GEMM ceiling (TF32 rows: of the TF32 one).

#include "benchmarks/kernels/families.h"
#include "kernels/cpu/conv2d.h"

#if ENGINE_HAVE_CUDA
#include "benchmarks/kernels/gpu_harness.h"
#include "kernels/cuda/conv2d_cudnn.h"
#include "kernels/cuda/conv2d_implicit_gemm.h"
#endif

namespace engine::bench {

namespace {

enum class Algo { ImplicitGemm, Cudnn, CudnnTf32 };
constexpr Algo kAlgos[] = {Algo::ImplicitGemm, Algo::Cudnn, Algo::CudnnTf32};

const char* algo_name(Algo a) {
  switch (a) {
    case Algo::ImplicitGemm: return "implicit-gemm";
    case Algo::Cudnn: return "cudnn fp32";
    case Algo::CudnnTf32: return "cudnn tf32";
  }
  return "?";
}

struct ConvCase {
  std::string label;
  Conv2dShape s;
  bool bias, needs_dx;
};

struct Tensors {
  std::vector<float> x, w, b, dy;
};

Tensors inputs(const Conv2dShape& s, bool bias) {
  return {random_floats(static_cast<std::int64_t>(s.x_size()), 36),
          random_floats(static_cast<std::int64_t>(s.w_size()), 37, -0.1f, 0.1f),
          bias ? random_floats(s.k, 38) : std::vector<float>{},
          random_floats(static_cast<std::int64_t>(s.y_size()), 39)};
}

// One algorithm's outputs (y, dx, dw, db) on `c` (batch already reduced), checked against `ref`.
Check check_one(GpuBench* g, Algo algo, const ConvCase& c, const Tensors& in,
                const std::vector<double>* ref) {
  const Conv2dShape& s = c.s;
  std::vector<float> y(s.y_size()), dx(c.needs_dx ? s.x_size() : 0), dw(s.w_size()), db(c.bias ? s.k : 0);
#if ENGINE_HAVE_CUDA
  if (g != nullptr) {
    const auto nx = static_cast<std::int64_t>(s.x_size()), nw = static_cast<std::int64_t>(s.w_size()),
               ny = static_cast<std::int64_t>(s.y_size());
    const Tensor tx = g->upload(in.x, {nx}), tw = g->upload(in.w, {nw}), tdy = g->upload(in.dy, {ny});
    const Tensor tb = c.bias ? g->upload(in.b, {s.k}) : Tensor();
    Tensor ty = g->poisoned({ny}), tdx = g->poisoned({nx}), tdw = g->poisoned({nw}), tdb = g->poisoned({s.k});
    const float* b = c.bias ? tb.data<float>() : nullptr;
    float* dxp = c.needs_dx ? tdx.data<float>() : nullptr;
    float* dbp = c.bias ? tdb.data<float>() : nullptr;
    if (algo == Algo::ImplicitGemm) {
      cuda::conv2d_forward_implicit_gemm(g->stream(), s, tx.data<float>(), tw.data<float>(), b,
                                         ty.data<float>());
      cuda::conv2d_backward_implicit_gemm(g->stream(), s, tx.data<float>(), tw.data<float>(),
                                          tdy.data<float>(), dxp, tdw.data<float>(), dbp);
    } else {
      cuda::CudaHandles& h = algo == Algo::Cudnn ? g->handles() : g->tf32_handles();
      cuda::conv2d_forward_cudnn(h, g->stream(), s, tx.data<float>(), tw.data<float>(), b, ty.data<float>());
      cuda::conv2d_backward_cudnn(h, g->stream(), s, tx.data<float>(), tw.data<float>(), tdy.data<float>(),
                                  dxp, tdw.data<float>(), dbp);
    }
    y = g->download(ty);
    if (c.needs_dx) dx = g->download(tdx);
    dw = g->download(tdw);
    if (c.bias) db = g->download(tdb);
  }
#endif
  if (g == nullptr) {  // smoke: the reference in float stands in for the kernel
    (void)algo;
    cpu::conv2d_forward(s, in.x.data(), in.w.data(), c.bias ? in.b.data() : nullptr, y.data());
    cpu::conv2d_backward(s, in.x.data(), in.w.data(), in.dy.data(), c.needs_dx ? dx.data() : nullptr,
                         dw.data(), c.bias ? db.data() : nullptr);
  }
  const double tol = algo == Algo::CudnnTf32 ? 5e-3 : 1e-4;  // METHOD.md: fp32 far under 1e-3; tf32 ~3e-4
  const std::string where = "N=" + std::to_string(s.n);
  std::vector<Check> checks{compare(y, ref[0], tol, where), compare(dw, ref[2], tol, where)};
  if (c.needs_dx) checks.push_back(compare(dx, ref[1], tol, where));
  if (c.bias) checks.push_back(compare(db, ref[3], tol, where));
  return worst(checks);
}

// Checks every algorithm on the case at a small batch; returns one Check per algorithm.
std::vector<Check> check(GpuBench* g, ConvCase c, int small_batch) {
  c.s.n = small_batch;
  const Conv2dShape& s = c.s;
  const Tensors in = inputs(s, c.bias);
  const std::vector<double> x = to_double(in.x), w = to_double(in.w), b = to_double(in.b),
                            dy = to_double(in.dy);
  std::vector<double> ref[4] = {std::vector<double>(s.y_size()), std::vector<double>(s.x_size()),
                                std::vector<double>(s.w_size()),
                                std::vector<double>(static_cast<std::size_t>(s.k))};
  cpu::conv2d_forward(s, x.data(), w.data(), c.bias ? b.data() : nullptr, ref[0].data());
  cpu::conv2d_backward(s, x.data(), w.data(), dy.data(), ref[1].data(), ref[2].data(), ref[3].data());
  std::vector<Check> out;
  for (Algo a : kAlgos) {
    // The smoke run has one CPU float path: check it once and use it for the three rows.
    if (g == nullptr && !out.empty()) {
      out.push_back(out.front());
      continue;
    }
    out.push_back(check_one(g, a, c, in, ref));
  }
  return out;
}

void run(Report& r, GpuBench* g) {
  std::vector<ConvCase> cases;
  std::vector<LayerCost> costs;
  for (const ZooLayer& z : zoo_layers("Conv2d")) {
    const Shape& i = z.layer.in;
    Conv2dShape s{.n = static_cast<int>(i[0]),
                  .c = static_cast<int>(i[1]),
                  .h = static_cast<int>(i[2]),
                  .w = static_cast<int>(i[3]),
                  .k = z.layer.out_channels,
                  .r = z.layer.kernel,
                  .s = z.layer.kernel,
                  .stride_h = z.layer.stride,
                  .stride_w = z.layer.stride,
                  .pad_h = z.layer.padding,
                  .pad_w = z.layer.padding};
    cases.push_back({z.label(), s, z.layer.bias, z.layer.needs_input_grad});
    costs.push_back(z.layer);
  }
  if (g != nullptr && r.options().fill_size) {
    const ModelCost resnet = zoo_model_cost("resnet18", 512);
    for (const LayerCost& c : resnet.layers) {
      if (c.path != "layer1.0.conv1") continue;
      Conv2dShape s{.n = 512,
                    .c = 64,
                    .h = 32,
                    .w = 32,
                    .k = 64,
                    .r = 3,
                    .s = 3,
                    .stride_h = 1,
                    .stride_w = 1,
                    .pad_h = 1,
                    .pad_w = 1};
      cases.push_back({shape_str(c.in) + " fill resnet18 " + c.path, s, false, true});
      costs.push_back(c);
    }
  }
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const ConvCase& k = cases[i];
    const LayerCost& cost = costs[i];
    const std::vector<Check> checks = check(g, k, g != nullptr ? 2 : 1);
    for (std::size_t a = 0; a < std::size(kAlgos); ++a) {
      const Algo algo = kAlgos[a];
      const Bound bound = algo == Algo::CudnnTf32 ? Bound::Tf32 : Bound::Fp32;
      Row fwd{.family = "conv2d",
              .name = std::string(algo_name(algo)) + " fwd",
              .shape = k.label,
              .bound = bound,
              .bytes = cost.forward_bytes,
              .flops = cost.forward_flops,
              .check = checks[a]};
      Row bwd{.family = "conv2d",
              .name = std::string(algo_name(algo)) + " bwd",
              .shape = k.label,
              .bound = bound,
              .bytes = cost.backward_bytes,
              .flops = cost.backward_flops,
              .check = checks[a]};
#if ENGINE_HAVE_CUDA
      if (g != nullptr) {
        const Conv2dShape& s = k.s;
        const auto nx = static_cast<std::int64_t>(s.x_size()), nw = static_cast<std::int64_t>(s.w_size()),
                   ny = static_cast<std::int64_t>(s.y_size());
        const Tensor x = g->upload(random_floats(nx, 40), {nx}), dy = g->upload(random_floats(ny, 41), {ny});
        const Tensor w = g->upload(random_floats(nw, 42, -0.1f, 0.1f), {nw}),
                     b = g->upload(random_floats(s.k, 43), {s.k});
        Tensor y = g->empty({ny}), dx = g->empty({nx}), dw = g->empty({nw}), db = g->empty({s.k});
        const float* bp = k.bias ? b.data<float>() : nullptr;
        float* dxp = k.needs_dx ? dx.data<float>() : nullptr;
        float* dbp = k.bias ? db.data<float>() : nullptr;
        if (algo == Algo::ImplicitGemm) {
          g->time_row(fwd, [&] {
            cuda::conv2d_forward_implicit_gemm(g->stream(), s, x.data<float>(), w.data<float>(), bp,
                                               y.data<float>());
          });
          g->time_row(bwd, [&] {
            cuda::conv2d_backward_implicit_gemm(g->stream(), s, x.data<float>(), w.data<float>(),
                                                dy.data<float>(), dxp, dw.data<float>(), dbp);
          });
        } else {
          cuda::CudaHandles& h = algo == Algo::Cudnn ? g->handles() : g->tf32_handles();
          g->time_row(fwd, [&] {
            cuda::conv2d_forward_cudnn(h, g->stream(), s, x.data<float>(), w.data<float>(), bp,
                                       y.data<float>());
          });
          g->time_row(bwd, [&] {
            cuda::conv2d_backward_cudnn(h, g->stream(), s, x.data<float>(), w.data<float>(), dy.data<float>(),
                                        dxp, dw.data<float>(), dbp);
          });
        }
        continue;
      }
#endif
      r.add(fwd);
      r.add(bwd);
    }
  }
}

}  // namespace

Family conv2d_family() { return {"conv2d", run}; }

}  // namespace engine::bench
