// convnext's LayerNorm2d (layer normalization over each pixel's channels), forward and backward,
// kernels/cuda/channel_layernorm.h against kernels/cpu/channel_layernorm.h, at convnext_tiny's four stages
// (batch 128; 32x32 images give 8x8 to 1x1 maps, 224x224 ones 56x56 to 7x7), NCHW. Memory-bound: forward
// reads x and writes y; backward reads x and dy and writes dx (and reads x twice more for the moments).

#include "benchmarks/kernels/families.h"
#include "kernels/cpu/channel_layernorm.h"

#if ENGINE_HAVE_CUDA
#include "benchmarks/kernels/gpu_harness.h"
#include "kernels/cuda/channel_layernorm.h"
#endif

namespace engine::bench {

namespace {

constexpr double kEps = 1e-6;
// Norm-wise: each output is the double formula rounded once (tests/gpu/cuda_channel_layernorm_test.cpp
// checks every element to 2^-24 of itself plus 2^-40 of the largest).
constexpr double kTolerance = 4 * 0x1p-24;

Check check(GpuBench* g, const ChannelAffineShape& s) {
  const std::int64_t n = s.numel();
  const std::vector<float> x = random_floats(n, 41), dy = random_floats(n, 42),
                           gamma = random_floats(s.channels, 43), beta = random_floats(s.channels, 44);
  const std::vector<double> xd = to_double(x), dyd = to_double(dy), gd = to_double(gamma),
                            bd = to_double(beta);
  std::vector<double> y_ref(x.size()), dx_ref(x.size()), dg_ref(gamma.size()), db_ref(gamma.size());
  cpu::channel_layernorm_forward<double>(s, kEps, xd.data(), gd.data(), bd.data(), y_ref.data());
  cpu::channel_layernorm_backward<double>(s, kEps, xd.data(), gd.data(), dyd.data(), dx_ref.data(),
                                          dg_ref.data(), db_ref.data());
  std::vector<float> y(x.size()), dx(x.size()), dg(gamma.size()), db(gamma.size());
#if ENGINE_HAVE_CUDA
  if (g != nullptr) {
    const Tensor tx = g->upload(x, {n}), tdy = g->upload(dy, {n}), tg = g->upload(gamma, {s.channels}),
                 tb = g->upload(beta, {s.channels});
    Tensor ty = g->poisoned({n}), tdx = g->poisoned({n}), tdg = g->poisoned({s.channels}),
           tdb = g->poisoned({s.channels});
    cuda::channel_layernorm_forward(g->stream(), s, kEps, tx.data<float>(), tg.data<float>(),
                                    tb.data<float>(), ty.data<float>());
    cuda::channel_layernorm_backward(g->stream(), s, kEps, tx.data<float>(), tg.data<float>(),
                                     tdy.data<float>(), tdx.data<float>(), tdg.data<float>(),
                                     tdb.data<float>());
    y = g->download(ty);
    dx = g->download(tdx);
    dg = g->download(tdg);
    db = g->download(tdb);
  }
#endif
  if (g == nullptr) {
    cpu::channel_layernorm_forward<float>(s, kEps, x.data(), gamma.data(), beta.data(), y.data());
    cpu::channel_layernorm_backward<float>(s, kEps, x.data(), gamma.data(), dy.data(), dx.data(), dg.data(),
                                           db.data());
  }
  const std::string where = dims({s.outer, s.channels, s.inner});
  return worst({compare(y, y_ref, kTolerance, where), compare(dx, dx_ref, kTolerance, where),
                compare(dg, dg_ref, kTolerance, where), compare(db, db_ref, kTolerance, where)});
}

void run(Report& r, GpuBench* g) {
  struct Case {
    std::string label;
    ChannelAffineShape s;
  };
  std::vector<Case> cases;
  for (const int image : {32, 224}) {
    int hw = image / 4;
    for (const int c : {96, 192, 384, 768}) {
      cases.push_back(
          {dims({128, c, hw, hw}) + " convnext_tiny " + std::to_string(image) + "px", {128, c, hw * hw}});
      hw /= 2;
    }
  }
  for (const Case& k : cases) {
    const Check c = check(g, {2, k.s.channels, std::min<std::int64_t>(k.s.inner, 64)});
    const double n = static_cast<double>(k.s.numel());
    Row fwd{.family = "channel_layernorm", .name = "forward", .shape = k.label, .bytes = 8 * n, .check = c};
    Row bwd{.family = "channel_layernorm", .name = "backward", .shape = k.label, .bytes = 12 * n, .check = c};
#if ENGINE_HAVE_CUDA
    if (g != nullptr) {
      const std::int64_t count = k.s.numel();
      const Tensor x = g->upload(random_floats(count, 45), {count}),
                   dy = g->upload(random_floats(count, 46), {count});
      const Tensor gamma = g->upload(random_floats(k.s.channels, 47), {k.s.channels});
      Tensor y = g->empty({count}), dx = g->empty({count}), dg = g->empty({k.s.channels}),
             db = g->empty({k.s.channels});
      g->time_row(fwd, [&] {
        cuda::channel_layernorm_forward(g->stream(), k.s, kEps, x.data<float>(), gamma.data<float>(), nullptr,
                                        y.data<float>());
      });
      g->time_row(bwd, [&] {
        cuda::channel_layernorm_backward(g->stream(), k.s, kEps, x.data<float>(), gamma.data<float>(),
                                         dy.data<float>(), dx.data<float>(), dg.data<float>(),
                                         db.data<float>());
      });
      continue;
    }
#endif
    r.add(fwd);
    r.add(bwd);
  }
}

}  // namespace

Family channel_layernorm_family() { return {"channel_layernorm", run}; }

}  // namespace engine::bench
