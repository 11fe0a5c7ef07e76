// BatchNorm2d in training mode, forward (batch statistics, normalize, running-stat update) and backward
// (dx, dgamma, dbeta), kernels/cuda/batchnorm2d.h against kernels/cpu/batchnorm2d.h, at every BatchNorm of
// vgg6 and resnet18 at batch 128. Bytes are the fewest (forward: read x, write y; backward: read x and dy,
// write dx; 8 and 12 bytes an element): the kernels read x (and dy) twice, once for the statistics and once
// for the elementwise pass, so they cannot pass ~67% / ~60% of the copy ceiling on shapes larger than L2.

#include "benchmarks/kernels/families.h"
#include "kernels/cpu/batchnorm2d.h"

#if ENGINE_HAVE_CUDA
#include "benchmarks/kernels/gpu_harness.h"
#include "kernels/cuda/batchnorm2d.h"
#endif

namespace engine::bench {

namespace {

Check check(GpuBench* g, const BatchNorm2dShape& s) {
  const auto n = static_cast<std::int64_t>(s.x_size());
  const auto c = static_cast<std::size_t>(s.c);
  // An offset mean (3) with unit spread: the statistics must not cancel.
  const std::vector<float> x = random_floats(n, 17, 2.0f, 4.0f), dy = random_floats(n, 18);
  const std::vector<float> gamma = random_floats(s.c, 19, 0.5f, 1.5f), beta = random_floats(s.c, 20);
  const std::vector<double> xd = to_double(x), dyd = to_double(dy), gd = to_double(gamma),
                            bd = to_double(beta);
  std::vector<double> y_ref(x.size()), mean_ref(c), invstd_ref(c), rm_ref(c, 0.0), rv_ref(c, 1.0);
  std::vector<double> dx_ref(x.size()), dg_ref(c), db_ref(c);
  cpu::batchnorm2d_forward_training(s, xd.data(), gd.data(), bd.data(), y_ref.data(), mean_ref.data(),
                                    invstd_ref.data(), rm_ref.data(), rv_ref.data());
  cpu::batchnorm2d_backward_training(s, xd.data(), gd.data(), mean_ref.data(), invstd_ref.data(), dyd.data(),
                                     dx_ref.data(), dg_ref.data(), db_ref.data());
  std::vector<float> y(x.size()), rm(c, 0.0f), rv(c, 1.0f), dx(x.size()), dg(c), db(c);
#if ENGINE_HAVE_CUDA
  if (g != nullptr) {
    const Tensor tx = g->upload(x, {n}), tdy = g->upload(dy, {n}), tg = g->upload(gamma, {s.c}),
                 tb = g->upload(beta, {s.c});
    Tensor trm = g->upload(rm, {s.c}), trv = g->upload(rv, {s.c});
    Tensor ty = g->poisoned({n}), tmean = g->poisoned({s.c}), tinv = g->poisoned({s.c});
    Tensor tdx = g->poisoned({n}), tdg = g->poisoned({s.c}), tdb = g->poisoned({s.c});
    cuda::batchnorm2d_forward_training(g->stream(), s, tx.data<float>(), tg.data<float>(), tb.data<float>(),
                                       ty.data<float>(), tmean.data<float>(), tinv.data<float>(),
                                       trm.data<float>(), trv.data<float>());
    cuda::batchnorm2d_backward_training(g->stream(), s, tx.data<float>(), tg.data<float>(),
                                        tmean.data<float>(), tinv.data<float>(), tdy.data<float>(),
                                        tdx.data<float>(), tdg.data<float>(), tdb.data<float>());
    y = g->download(ty);
    rm = g->download(trm);
    rv = g->download(trv);
    dx = g->download(tdx);
    dg = g->download(tdg);
    db = g->download(tdb);
  }
#endif
  if (g == nullptr) {
    std::vector<float> mean(c), invstd(c);
    cpu::batchnorm2d_forward_training(s, x.data(), gamma.data(), beta.data(), y.data(), mean.data(),
                                      invstd.data(), rm.data(), rv.data());
    cpu::batchnorm2d_backward_training(s, x.data(), gamma.data(), mean.data(), invstd.data(), dy.data(),
                                       dx.data(), dg.data(), db.data());
  }
  const std::string where = dims({s.n, s.c, s.h, s.w});
  return worst({compare(y, y_ref, 1e-5, where), compare(rm, rm_ref, 1e-5, where),
                compare(rv, rv_ref, 1e-5, where), compare(dx, dx_ref, 1e-4, where),
                compare(dg, dg_ref, 1e-4, where), compare(db, db_ref, 1e-5, where)});
}

void run(Report& r, GpuBench* g) {
  struct Case {
    std::string label;
    BatchNorm2dShape s;
  };
  std::vector<Case> cases;
  for (const ZooLayer& z : zoo_layers("BatchNorm2d")) {
    const Shape& i = z.layer.in;
    cases.push_back(
        {z.label(),
         {static_cast<int>(i[0]), static_cast<int>(i[1]), static_cast<int>(i[2]), static_cast<int>(i[3])}});
  }
  if (g != nullptr && r.options().fill_size) cases.push_back({"[512, 64, 32, 32] fill", {512, 64, 32, 32}});
  for (const Case& k : cases) {
    BatchNorm2dShape small = k.s;
    small.n = 2;
    const Check c = check(g, small);
    const double n = static_cast<double>(k.s.x_size());
    Row fwd{.family = "batchnorm2d", .name = "forward train", .shape = k.label, .bytes = 8 * n, .check = c};
    Row bwd{.family = "batchnorm2d", .name = "backward train", .shape = k.label, .bytes = 12 * n, .check = c};
#if ENGINE_HAVE_CUDA
    if (g != nullptr) {
      const auto size = static_cast<std::int64_t>(k.s.x_size());
      const Tensor x = g->upload(random_floats(size, 21, 2.0f, 4.0f), {size});
      const Tensor dy = g->upload(random_floats(size, 22), {size});
      const Tensor gamma = g->upload(random_floats(k.s.c, 23, 0.5f, 1.5f), {k.s.c});
      const Tensor beta = g->upload(random_floats(k.s.c, 24), {k.s.c});
      Tensor y = g->empty({size}), dx = g->empty({size}), mean = g->empty({k.s.c}), inv = g->empty({k.s.c});
      Tensor rm = g->upload(std::vector<float>(static_cast<std::size_t>(k.s.c), 0.0f), {k.s.c});
      Tensor rv = g->upload(std::vector<float>(static_cast<std::size_t>(k.s.c), 1.0f), {k.s.c});
      Tensor dg = g->empty({k.s.c}), db = g->empty({k.s.c});
      g->time_row(fwd, [&] {
        cuda::batchnorm2d_forward_training(g->stream(), k.s, x.data<float>(), gamma.data<float>(),
                                           beta.data<float>(), y.data<float>(), mean.data<float>(),
                                           inv.data<float>(), rm.data<float>(), rv.data<float>());
      });
      g->time_row(bwd, [&] {
        cuda::batchnorm2d_backward_training(g->stream(), k.s, x.data<float>(), gamma.data<float>(),
                                            mean.data<float>(), inv.data<float>(), dy.data<float>(),
                                            dx.data<float>(), dg.data<float>(), db.data<float>());
      });
      continue;
    }
#endif
    r.add(fwd);
    r.add(bwd);
  }
}

}  // namespace

Family batchnorm2d_family() { return {"batchnorm2d", run}; }

}  // namespace engine::bench
