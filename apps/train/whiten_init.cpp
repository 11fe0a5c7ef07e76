#include "apps/train/whiten_init.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include <fmt/format.h>

#include "core/error.h"
#include "layers/conv2d.h"
#include "layers/patch_whitening.h"

namespace engine::apps {

std::string apply_whiten_init(layers::Model& model, const TrainData& data, std::int64_t images) {
  const auto start = std::chrono::steady_clock::now();
  const layers::Parameter* weight = nullptr;
  for (const layers::Parameter& p : model.parameters()) {
    if (p.layer->kind() == "Conv2d") {
      weight = &p;
      break;
    }
  }
  ENGINE_CHECK(weight != nullptr, "--whiten-init {}: model {} has no Conv2d to whiten", images, model.name());
  const auto* conv = dynamic_cast<const layers::Conv2d*>(weight->layer);
  ENGINE_CHECK(conv != nullptr && weight->name.ends_with("weight"),
               "--whiten-init: {} is not a Conv2d's weight", weight->name);
  const layers::Conv2dOptions& o = conv->options();
  const int k = o.kernel_size, d = o.in_channels * k * k;
  ENGINE_CHECK(o.out_channels == 2 * d && o.stride == 1 && o.square(),
               "--whiten-init {}: the first convolution of {} ({}) is {} -> {} channels, {}, stride {}; "
               "whitening needs a square kernel, out = 2 * in*k*k = {} channels and stride 1 (airbench94's: "
               "3 -> 24, 2x2)",
               images, model.name(), weight->name, o.in_channels, o.out_channels, layers::kernel_str(o),
               layers::stride_str(o), 2 * d);
  const data::Dataset& train = data.train;
  ENGINE_CHECK(train.size() > 0, "--whiten-init {}: the training set is not loaded", images);
  ENGINE_CHECK(train.channels == o.in_channels &&
                   data.mean.size() == static_cast<std::size_t>(train.channels) &&
                   data.std.size() == data.mean.size(),
               "--whiten-init {}: the images have {} channels ({} means), the first convolution takes {}",
               images, train.channels, data.mean.size(), o.in_channels);
  // A preset's N (airbench94: 5000) on a --limit-train subset: all of it, said in the log line.
  const std::int64_t used = std::min(images, train.size());
  ENGINE_CHECK(k <= train.height && k <= train.width, "--whiten-init {}: a {}x{} kernel on {}x{} images",
               images, k, k, train.height, train.width);

  // The images as training normalizes them: (x / 255 - mean) / std per channel (data/transforms).
  const std::int64_t plane = train.height * train.width, image_bytes = train.image_bytes();
  std::vector<float> pixels(static_cast<std::size_t>(used * image_bytes));
  std::vector<std::uint8_t> image(static_cast<std::size_t>(image_bytes));
  for (std::int64_t n = 0; n < used; ++n) {
    data::read_sample(train, n, 0, image.data());  // from memory, or as epoch 0 reads it from disk
    const std::uint8_t* src = image.data();
    for (std::int64_t i = 0; i < image_bytes; ++i) {
      const std::size_t c = static_cast<std::size_t>(i / plane);
      pixels[n * image_bytes + i] = (static_cast<float>(src[i]) / 255.0f - data.mean[c]) / data.std[c];
    }
  }
  const std::vector<double> cov = layers::patch_covariance(
      pixels, used, o.in_channels, static_cast<int>(train.height), static_cast<int>(train.width), k);
  const std::vector<double> w = layers::whitening_weights(cov, d, kWhitenEps);
  const layers::SymmetricEigen eig = layers::symmetric_eigen(cov, d);

  const Tensor& value = weight->value;
  ENGINE_CHECK(value.numel() == static_cast<std::int64_t>(w.size()),
               "--whiten-init: {} holds {} values, not {}", weight->name, value.numel(), w.size());
  void* stream = model.context().stream;
  if (value.dtype() == DType::F64) {
    Tensor(value).copy_from(Tensor::from_vector(w, value.shape()), stream);
  } else {
    ENGINE_CHECK(value.dtype() == DType::F32, "--whiten-init: {} is {}, expected float32 or float64",
                 weight->name, dtype_name(value.dtype()));
    Tensor(value).copy_from(Tensor::from_vector(std::vector<float>(w.begin(), w.end()), value.shape()),
                            stream);
  }
  model.parameters_written();  // bf16 autocast: the mirror follows the whitening weights
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return fmt::format(
      "cnn_train: --whiten-init {}: {} set from the {}x{} patches of {} training images{} (eigenvalues "
      "{:.4g} "
      "to {:.4g}, eps {}) in {:.3f} s",
      images, weight->name, k, k, used, used < images ? " (all there are)" : "", eig.values.front(),
      eig.values.back(), kWhitenEps, seconds);
}

}  // namespace engine::apps
