#pragma once
// The kernel families kernel_bench knows, one source file each, and the zoo shapes they run at.
//
// Every family runs the same code in both modes:
//   GPU (bench != nullptr): validate the CUDA kernel against the CPU reference on a small size, then time it
//     at every zoo shape (batch 128) and at one size that fills the GPU;
//   smoke (bench == nullptr, --smoke, any machine): the same validation with the CPU reference in float
//     standing in for the kernel, on a tiny size, and the same rows (bytes/FLOPs) with no timing.

#include <string>
#include <vector>

#include "benchmarks/common/layer_costs.h"
#include "benchmarks/kernels/harness.h"

namespace engine::bench {

class GpuBench;  // gpu_harness.h; CUDA builds only

struct Family {
  const char* name;
  // Runs the family. `bench` is nullptr in smoke mode (and always in a CPU-only build).
  void (*run)(Report& report, GpuBench* bench);
};

std::vector<Family> families();

// The zoo layers of `kind` ("Conv2d", "ReLU", ...) at `batch` in vgg6, resnet18 and mnist_cnn, one per
// distinct geometry (input shape + options), each tagged with the first model and layer that runs it.
struct ZooLayer {
  std::string model;
  LayerCost layer;
  std::string label() const;  // "[128, 64, 32, 32] vgg6 features.3"
};
std::vector<ZooLayer> zoo_layers(const std::string& kind, std::int64_t batch = 128);

// The number of elements per tensor in the "fills the GPU" case of an elementwise family: 64 Mi floats
// (256 MiB per tensor), thousands of waves on any current GPU and far beyond any L2.
inline constexpr std::int64_t kFillElements = std::int64_t{64} << 20;

// One size a flat (elementwise) family runs at: its label in the table and its element count.
struct FlatCase {
  std::string label;
  std::int64_t n = 0;
};
// Adds the kFillElements case when the family times a GPU (`bench` set) and --fill-size is on.
void add_fill_case(std::vector<FlatCase>& cases, const Report& report, const GpuBench* bench);
// The zoo layers of `kind` as flat element counts (their input's), then the fill case.
std::vector<FlatCase> flat_zoo_cases(const std::string& kind, const Report& report, const GpuBench* bench);

Family relu_family();
Family activation_family();
Family dropout_family();
Family batchnorm2d_family();
Family maxpool2d_family();
Family global_avgpool_family();
Family softmax_cross_entropy_family();
Family bias_family();
Family sgd_family();
Family augment_family();
Family conv2d_family();
Family linear_family();
Family channel_layernorm_family();

}  // namespace engine::bench
