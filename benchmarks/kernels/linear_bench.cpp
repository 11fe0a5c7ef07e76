// Linear through cuBLAS (kernels/cuda/linear.h), fp32 (CUBLAS_COMPUTE_32F, the engine's default) and with
// TF32 allowed, forward (y = x W^T + b) and backward (dx = dy W, dW = dy^T x, db), at every linear layer of
// the zoo at batch 128 and at one GEMM that fills the GPU ([8192, 4096] x [4096, 4096]). Checked against
// kernels/cpu/linear.h in double at batch min(N, 64) (8 rows for the fill GEMM). The zoo's layers are small
// GEMMs (vgg6's fc1 is 128 x 4096 x 512: 0.5 GFLOP), far from the ceiling by shape alone.

#include <algorithm>

#include "benchmarks/kernels/families.h"
#include "kernels/cpu/linear.h"

#if ENGINE_HAVE_CUDA
#include "benchmarks/kernels/gpu_harness.h"
#include "kernels/cuda/linear.h"
#endif

namespace engine::bench {

namespace {

Check check(GpuBench* g, const LinearShape& s, bool tf32) {
  const std::vector<float> x = random_floats(static_cast<std::int64_t>(s.x_size()), 44),
                           w = random_floats(static_cast<std::int64_t>(s.w_size()), 45, -0.05f, 0.05f),
                           b = random_floats(s.out_features, 46),
                           dy = random_floats(static_cast<std::int64_t>(s.y_size()), 47);
  const std::vector<double> xd = to_double(x), wd = to_double(w), bd = to_double(b), dyd = to_double(dy);
  std::vector<double> y_ref(s.y_size()), dx_ref(s.x_size()), dw_ref(s.w_size()),
      db_ref(static_cast<std::size_t>(s.out_features));
  cpu::linear_forward(s, xd.data(), wd.data(), bd.data(), y_ref.data());
  cpu::linear_backward(s, xd.data(), wd.data(), dyd.data(), dx_ref.data(), dw_ref.data(), db_ref.data());
  std::vector<float> y(y_ref.size()), dx(dx_ref.size()), dw(dw_ref.size()), db(db_ref.size());
#if ENGINE_HAVE_CUDA
  if (g != nullptr) {
    const auto nx = static_cast<std::int64_t>(s.x_size()), nw = static_cast<std::int64_t>(s.w_size()),
               ny = static_cast<std::int64_t>(s.y_size());
    const Tensor tx = g->upload(x, {nx}), tw = g->upload(w, {nw}), tb = g->upload(b, {s.out_features}),
                 tdy = g->upload(dy, {ny});
    Tensor ty = g->poisoned({ny}), tdx = g->poisoned({nx}), tdw = g->poisoned({nw}),
           tdb = g->poisoned({s.out_features});
    cuda::CudaHandles& h = tf32 ? g->tf32_handles() : g->handles();
    cuda::linear_forward(h, g->stream(), s, tx.data<float>(), tw.data<float>(), tb.data<float>(),
                         ty.data<float>());
    cuda::linear_backward(h, g->stream(), s, tx.data<float>(), tw.data<float>(), tdy.data<float>(),
                          tdx.data<float>(), tdw.data<float>(), tdb.data<float>());
    y = g->download(ty);
    dx = g->download(tdx);
    dw = g->download(tdw);
    db = g->download(tdb);
  }
#endif
  if (g == nullptr) {
    cpu::linear_forward(s, x.data(), w.data(), b.data(), y.data());
    cpu::linear_backward(s, x.data(), w.data(), dy.data(), dx.data(), dw.data(), db.data());
  }
  const double tol = tf32 ? 5e-3 : 1e-4;  // METHOD.md: fp32 far under 1e-3; tf32 ~3e-4
  const std::string where = "N=" + std::to_string(s.n);
  return worst({compare(y, y_ref, tol, where), compare(dx, dx_ref, tol, where),
                compare(dw, dw_ref, tol, where), compare(db, db_ref, tol, where)});
}

void run(Report& r, GpuBench* g) {
  struct Case {
    std::string label;
    LinearShape s;
  };
  std::vector<Case> cases;
  for (const ZooLayer& z : zoo_layers("Linear")) {
    cases.push_back(
        {z.label() + " ->" + std::to_string(z.layer.out_channels),
         {static_cast<int>(z.layer.in[0]), static_cast<int>(z.layer.in[1]), z.layer.out_channels}});
  }
  if (g != nullptr && r.options().fill_size)
    cases.push_back({"[8192, 4096] ->4096 fill", {8192, 4096, 4096}});
  for (const Case& k : cases) {
    // The double reference is plain loops: fewer rows for the fill GEMM keep the check to seconds.
    const int check_rows = std::min(k.s.n, k.s.in_features * k.s.out_features > (1 << 22) ? 8 : 64);
    const LinearShape small{check_rows, k.s.in_features, k.s.out_features};
    const double macs = static_cast<double>(k.s.n) * k.s.in_features * k.s.out_features;
    const double nx = static_cast<double>(k.s.x_size()), nw = static_cast<double>(k.s.w_size()),
                 ny = static_cast<double>(k.s.y_size());
    for (bool tf32 : {false, true}) {
      const Check c = (g == nullptr && tf32) ? check(g, small, false) : check(g, small, tf32);
      const Bound bound = tf32 ? Bound::Tf32 : Bound::Fp32;
      const std::string tag = tf32 ? "cublas tf32" : "cublas fp32";
      Row fwd{.family = "linear",
              .name = tag + " fwd",
              .shape = k.label,
              .bound = bound,
              .bytes = 4 * (nx + nw + ny),
              .flops = 2 * macs + ny,
              .check = c};
      Row bwd{.family = "linear",
              .name = tag + " bwd",
              .shape = k.label,
              .bound = bound,
              .bytes = 4 * (ny + nx + 2 * nw + nx),
              .flops = 4 * macs + ny,
              .check = c};
#if ENGINE_HAVE_CUDA
      if (g != nullptr) {
        const LinearShape& s = k.s;
        const auto n_x = static_cast<std::int64_t>(s.x_size()), n_w = static_cast<std::int64_t>(s.w_size()),
                   n_y = static_cast<std::int64_t>(s.y_size());
        const Tensor x = g->upload(random_floats(n_x, 48), {n_x}),
                     w = g->upload(random_floats(n_w, 49), {n_w});
        const Tensor b = g->upload(random_floats(s.out_features, 50), {s.out_features});
        const Tensor dy = g->upload(random_floats(n_y, 51), {n_y});
        Tensor y = g->empty({n_y}), dx = g->empty({n_x}), dw = g->empty({n_w}),
               db = g->empty({s.out_features});
        cuda::CudaHandles& h = tf32 ? g->tf32_handles() : g->handles();
        g->time_row(fwd, [&] {
          cuda::linear_forward(h, g->stream(), s, x.data<float>(), w.data<float>(), b.data<float>(),
                               y.data<float>());
        });
        g->time_row(bwd, [&] {
          cuda::linear_backward(h, g->stream(), s, x.data<float>(), w.data<float>(), dy.data<float>(),
                                dx.data<float>(), dw.data<float>(), db.data<float>());
        });
        continue;
      }
#endif
      r.add(fwd);
      r.add(bwd);
    }
  }
}

}  // namespace

Family linear_family() { return {"linear", run}; }

}  // namespace engine::bench
