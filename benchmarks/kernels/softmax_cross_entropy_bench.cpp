// Fused softmax cross-entropy (loss, dlogits and the correct count in one pass, label smoothing 0.1),
// kernels/cuda/softmax_cross_entropy.h against kernels/cpu/softmax_cross_entropy.h. The zoo's logits are
// [128, 10]: a launch-latency case, not a bandwidth one; the fill size [65536, 1000] shows the bandwidth.
// Bytes: read logits and labels, write dlogits.

#include "benchmarks/kernels/families.h"
#include "kernels/cpu/softmax_cross_entropy.h"

#if ENGINE_HAVE_CUDA
#include "benchmarks/kernels/gpu_harness.h"
#include "kernels/cuda/softmax_cross_entropy.h"
#endif

namespace engine::bench {

namespace {

constexpr double kSmoothing = 0.1;

std::vector<std::int32_t> labels_for(int n, int k) {
  std::vector<std::int32_t> l(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) l[static_cast<std::size_t>(i)] = static_cast<std::int32_t>((i * 7 + 3) % k);
  return l;
}

Check check(GpuBench* g, int n, int k) {
  const std::int64_t nk = std::int64_t{n} * k;
  const std::vector<float> z = random_floats(nk, 33, -4.0f, 4.0f);
  const std::vector<std::int32_t> labels = labels_for(n, k);
  const std::vector<double> zd = to_double(z);
  std::vector<double> dz_ref(z.size());
  const std::vector<double> loss_ref{
      cpu::softmax_cross_entropy_forward(zd.data(), labels.data(), n, k, kSmoothing)};
  cpu::softmax_cross_entropy_backward(zd.data(), labels.data(), n, k, kSmoothing, dz_ref.data());
  std::vector<float> loss(1), dz(z.size());
#if ENGINE_HAVE_CUDA
  if (g != nullptr) {
    const Tensor tz = g->upload(z, {nk}), tl = g->upload_i32(labels, {n});
    Tensor tloss = g->poisoned({1}), tdz = g->poisoned({nk});
    cuda::softmax_cross_entropy(g->stream(), tz.data<float>(), tl.data<std::int32_t>(), n, k, kSmoothing,
                                tloss.data<float>(), tdz.data<float>(), nullptr, nullptr);
    loss = g->download(tloss);
    dz = g->download(tdz);
  }
#endif
  if (g == nullptr) {
    loss[0] =
        static_cast<float>(cpu::softmax_cross_entropy_forward(z.data(), labels.data(), n, k, kSmoothing));
    cpu::softmax_cross_entropy_backward(z.data(), labels.data(), n, k, kSmoothing, dz.data());
  }
  const std::string where = dims({n, k});
  return worst({compare(loss, loss_ref, 1e-5, where), compare(dz, dz_ref, 1e-5, where)});
}

void run(Report& r, GpuBench* g) {
  struct Case {
    std::string label;
    int n, k;
  };
  std::vector<Case> cases;
  for (const char* model : {"vgg6", "resnet18", "mnist_cnn"}) {
    const Shape out = zoo_model_cost(model, 128).layers.back().out;
    const std::string label = shape_str(out) + " logits";
    bool seen = false;
    for (const Case& c : cases) seen = seen || c.label == label;
    if (!seen) cases.push_back({label, static_cast<int>(out[0]), static_cast<int>(out[1])});
  }
  if (g != nullptr && r.options().fill_size) cases.push_back({"[65536, 1000] fill", 65536, 1000});
  for (const Case& k : cases) {
    const Check c = check(g, std::min(k.n, 64), k.k);
    const double nk = static_cast<double>(k.n) * k.k;
    Row row{.family = "softmax_cross_entropy",
            .name = "forward+backward",
            .shape = k.label,
            .bytes = 8 * nk + 4.0 * k.n,
            .check = c};
#if ENGINE_HAVE_CUDA
    if (g != nullptr) {
      const std::int64_t size = std::int64_t{k.n} * k.k;
      const Tensor z = g->upload(random_floats(size, 34, -4.0f, 4.0f), {size});
      const Tensor labels = g->upload_i32(labels_for(k.n, k.k), {k.n});
      Tensor loss = g->empty({1}), dz = g->empty({size});
      g->time_row(row, [&] {
        cuda::softmax_cross_entropy(g->stream(), z.data<float>(), labels.data<std::int32_t>(), k.n, k.k,
                                    kSmoothing, loss.data<float>(), dz.data<float>(), nullptr, nullptr);
      });
      continue;
    }
#endif
    r.add(row);
  }
}

}  // namespace

Family softmax_cross_entropy_family() { return {"softmax_cross_entropy", run}; }

}  // namespace engine::bench
