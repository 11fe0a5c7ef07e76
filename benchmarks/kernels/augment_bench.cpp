// The GPU-resident loader's one kernel (data/cuda/transforms.h): gather a batch of uint8 CIFAR images from
// the dataset on the GPU, random crop 32 with padding 4, horizontal flip, normalize to float32 NCHW, and
// gather the labels. Checked against the CPU transform (data/transforms.h) and a float64 evaluation of
// (x / 255 - mean) / std at the same draws (data/augment_params.h). Bytes: 3 KB of uint8 read and 12 KB of
// float written per image (plus 12 bytes of indices and labels).

#include "benchmarks/kernels/families.h"
#include "data/augment_params.h"
#include "data/transforms.h"

#if ENGINE_HAVE_CUDA
#include "benchmarks/kernels/gpu_harness.h"
#include "data/cuda/transforms.h"
#endif

namespace engine::bench {

namespace {

constexpr int kC = 3, kH = 32, kW = 32, kImage = kC * kH * kW;
constexpr std::int64_t kDatasetImages = 50000;
constexpr std::uint64_t kEpoch = 3;

data::TransformConfig recipe() {
  return data::TransformConfig::train({0.4914f, 0.4822f, 0.4465f}, {0.2470f, 0.2435f, 0.2616f}, /*seed=*/42);
}

std::vector<std::uint8_t> random_images(std::int64_t n) {
  std::vector<std::uint8_t> out(static_cast<std::size_t>(n * kImage));
  std::uint64_t s = 35;
  for (std::size_t i = 0; i < out.size(); i += 8) {  // splitmix64, 8 bytes a draw
    std::uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    for (std::size_t b = 0; b < 8 && i + b < out.size(); ++b)
      out[i + b] = static_cast<std::uint8_t>(z >> (8 * b));
  }
  return out;
}

// Sample b of the batch is dataset image (b * 7919) % n: a scattered gather, as a shuffled epoch's.
std::vector<std::int32_t> gather_list(std::int64_t batch, std::int64_t n) {
  std::vector<std::int32_t> g(static_cast<std::size_t>(batch));
  for (std::int64_t b = 0; b < batch; ++b)
    g[static_cast<std::size_t>(b)] = static_cast<std::int32_t>((b * 7919) % n);
  return g;
}

Check check(GpuBench* g, std::int64_t batch) {
  const std::int64_t n = 1000;
  const std::vector<std::uint8_t> images = random_images(n);
  const std::vector<std::int32_t> ids = gather_list(batch, n);
  const data::Transform t(recipe());
  const data::AugmentSpec spec = t.spec();
  std::vector<double> ref(static_cast<std::size_t>(batch * kImage));
  for (std::int64_t b = 0; b < batch; ++b) {
    const std::int32_t id = ids[static_cast<std::size_t>(b)];
    const data::AugmentDraw d = data::draw_augment(spec, kEpoch, static_cast<std::uint64_t>(id));
    for (int c = 0; c < kC; ++c) {
      for (int y = 0; y < kH; ++y) {
        for (int x = 0; x < kW; ++x) {
          const int sy = data::source_y(y, d, spec.pad), sx = data::source_x(x, kW, d, spec.pad);
          const bool inside = sy >= 0 && sy < kH && sx >= 0 && sx < kW;
          const double v =
              inside ? images[static_cast<std::size_t>(id * kImage + (c * kH + sy) * kW + sx)] : 0.0;
          ref[static_cast<std::size_t>(((b * kC + c) * kH + y) * kW + x)] =
              (v / 255.0 - static_cast<double>(t.mean(c))) / static_cast<double>(t.std_dev(c));
        }
      }
    }
  }
  std::vector<float> got(ref.size());
#if ENGINE_HAVE_CUDA
  if (g != nullptr) {
    Tensor timages = g->empty({n * kImage}, DType::U8);
    timages.copy_from(Tensor::from_vector(images, {n * kImage}), g->stream());
    const Tensor tids = g->upload_i32(ids, {batch});
    Tensor out = g->poisoned({batch * kImage});
    data::cuda::AugmentBatchArgs a;
    a.images = timages.data<std::uint8_t>();
    a.gather = tids.data<std::int32_t>();
    a.sample_ids = tids.data<std::int32_t>();
    a.batch = batch;
    a.channels = kC;
    a.height = kH;
    a.width = kW;
    a.spec = spec;
    a.epoch = kEpoch;
    for (int c = 0; c < kC; ++c) {
      a.mean[c] = t.mean(c);
      a.std_dev[c] = t.std_dev(c);
    }
    a.out = out.data<float>();
    data::cuda::augment_normalize(a, g->stream());
    got = g->download(out);
  }
#endif
  if (g == nullptr) {
    for (std::int64_t b = 0; b < batch; ++b) {
      const std::int32_t id = ids[static_cast<std::size_t>(b)];
      t.apply(images.data() + id * kImage, kC, kH, kW, id, kEpoch, got.data() + b * kImage);
    }
  }
  return compare(got, ref, 1e-6, "batch " + std::to_string(batch));
}

void run(Report& r, GpuBench* g) {
  const Check c = check(g, g != nullptr ? 256 : 16);
  std::vector<std::int64_t> batches{128, 512};
  if (g != nullptr && r.options().fill_size) batches.push_back(32768);
#if ENGINE_HAVE_CUDA
  // The resident dataset and its labels, uploaded once for every batch size.
  Tensor timages, tlabels;
  if (g != nullptr) {
    const std::vector<std::uint8_t> images = random_images(kDatasetImages);
    timages = g->empty({kDatasetImages * kImage}, DType::U8);
    timages.copy_from(Tensor::from_vector(images, {kDatasetImages * kImage}), g->stream());
    std::vector<std::int32_t> labels(static_cast<std::size_t>(kDatasetImages));
    for (std::size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<std::int32_t>(i % 10);
    tlabels = g->upload_i32(labels, {kDatasetImages});
  }
#endif
  for (std::int64_t batch : batches) {
    const double bytes = static_cast<double>(batch) * (kImage + 4.0 * kImage + 12.0);
    Row row{.family = "augment",
            .name = "gather crop flip norm",
            .shape = dims({batch, kC, kH, kW}) + (batch > 512 ? " fill" : " cifar"),
            .bytes = bytes,
            .check = c};
#if ENGINE_HAVE_CUDA
    if (g != nullptr) {
      const Tensor ids = g->upload_i32(gather_list(batch, kDatasetImages), {batch});
      Tensor out = g->empty({batch * kImage}), out_labels = g->empty({batch}, DType::I32);
      const data::Transform t(recipe());
      data::cuda::AugmentBatchArgs a;
      a.images = timages.data<std::uint8_t>();
      a.labels = tlabels.data<std::int32_t>();
      a.gather = ids.data<std::int32_t>();
      a.sample_ids = ids.data<std::int32_t>();
      a.batch = batch;
      a.channels = kC;
      a.height = kH;
      a.width = kW;
      a.spec = t.spec();
      a.epoch = kEpoch;
      for (int ch = 0; ch < kC; ++ch) {
        a.mean[ch] = t.mean(ch);
        a.std_dev[ch] = t.std_dev(ch);
      }
      a.out = out.data<float>();
      a.out_labels = out_labels.data<std::int32_t>();
      g->time_row(row, [&] { data::cuda::augment_normalize(a, g->stream()); });
      // The same batch written channels last (what an NHWC model takes; checked by
      // tests/gpu/data_pipeline_test).
      Row nhwc = row;
      nhwc.name = "gather crop flip norm nhwc";
      a.out_layout = Layout::NHWC;
      g->time_row(nhwc, [&] { data::cuda::augment_normalize(a, g->stream()); });
      continue;
    }
#endif
    r.add(row);
  }
}

}  // namespace

Family augment_family() { return {"augment", run}; }

}  // namespace engine::bench
