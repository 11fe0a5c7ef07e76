#include "benchmarks/kernels/families.h"

#include <fmt/format.h>

namespace engine::bench {

std::vector<Family> families() {
  return {relu_family(),
          dropout_family(),
          batchnorm2d_family(),
          maxpool2d_family(),
          global_avgpool_family(),
          softmax_cross_entropy_family(),
          bias_family(),
          sgd_family(),
          augment_family(),
          conv2d_family(),
          linear_family(),
          activation_family(),
          channel_layernorm_family()};
}

std::string ZooLayer::label() const {
  return fmt::format("{} {} {}", shape_str(layer.in), model, layer.path);
}

std::vector<ZooLayer> zoo_layers(const std::string& kind, std::int64_t batch) {
  std::vector<ZooLayer> out;
  for (const char* model : {"vgg6", "resnet18", "mnist_cnn"}) {
    for (const LayerCost& c : zoo_model_cost(model, batch).layers) {
      if (c.kind != kind) continue;
      bool seen = false;
      for (const ZooLayer& z : out) {
        const LayerCost& o = z.layer;
        seen =
            seen || (o.in == c.in && o.out == c.out && o.kernel == c.kernel && o.stride == c.stride &&
                     o.padding == c.padding && o.bias == c.bias && o.needs_input_grad == c.needs_input_grad);
      }
      if (!seen) out.push_back({model, c});
    }
  }
  return out;
}

void add_fill_case(std::vector<FlatCase>& cases, const Report& report, const GpuBench* bench) {
  if (bench != nullptr && report.options().fill_size) {
    cases.push_back({dims({kFillElements}) + " fill", kFillElements});
  }
}

std::vector<FlatCase> flat_zoo_cases(const std::string& kind, const Report& report, const GpuBench* bench) {
  std::vector<FlatCase> cases;
  for (const ZooLayer& z : zoo_layers(kind)) cases.push_back({z.label(), shape_numel(z.layer.in)});
  add_fill_case(cases, report, bench);
  return cases;
}

}  // namespace engine::bench
