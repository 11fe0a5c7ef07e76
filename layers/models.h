#pragma once
// The model zoo. Each model mirrors one PyTorch module exactly (docs/MODELS.md holds the Python), so its
// state dict names and shapes are PyTorch's and checkpoints load both ways.
//
//   vgg6       6 conv3x3 (64,64 | 128,128 | 256,256, each + BatchNorm + ReLU, max-pool 2 after each pair),
//              Linear 4096->512, ReLU, Dropout 0.5, Linear 512->classes.  3,249,994 parameters on 3x32x32.
//   cnn3       3 conv3x3 (64, 128, 256; each + BatchNorm + ReLU + max-pool 2), then vgg6's classifier.
//                                                                          2,474,506 parameters on 3x32x32.
//   mnist_cnn  PyTorch's examples/mnist Net.                               1,199,882 parameters on 1x28x28.
//   resnet18   follows the input's size (issue 42): below 128 pixels on the shorter side
//   kuangliu/pytorch-cifar's
//              ResNet18 (3x3 stem, no stem pool, BasicBlocks 2-2-2-2, global average pool, "linear"):
//                                                                          11,173,962 parameters on 3x32x32;
//              from 128 torchvision.models.resnet18 (7x7 stride-2 stem, 3x3 stride-2 max-pool, the same
//              blocks with "downsample" shortcuts, "fc"), its state dict torchvision's:
//                                                                          11,181,642 parameters on
//                                                                          3x224x224.
//   airbench   airbench94's net (KellerJordan/cifar10-airbench): a 2x2 whitening conv 3->24 with bias, GELU,
//              three conv groups 64/256/256 (conv3x3 no bias, max-pool 2, BatchNorm, GELU, conv3x3,
//              BatchNorm, GELU; BatchNorm eps 1e-12, PyTorch momentum 0.4), max-pool 3, Linear 256->classes
//              without bias, times 1/9; convs start at airbench's identity init.  1,972,792 parameters on
//              3x32x32. Its BatchNorm weights stay 1 only where the trainer freezes them (--recipe
//              airbench94's parameter groups), as airbench's requires_grad=False does.
//
// The classifiers' input sizes are fixed (4096 = 256*4*4 for vgg6/cnn3, 9216 = 64*12*12 for mnist_cnn), so
// those models accept exactly the inputs that flatten to that size (32x32 to 39x39 for vgg6/cnn3, 25x25 to
// 48x48 for airbench, 28x28 and 29x29 for mnist_cnn: the parameter counts stay the architectures' own); any
// other size is an engine::Error naming the model, the input and the sizes the model takes. resnet18 ends in
// a global average pool and accepts any size.

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "layers/model.h"

namespace engine::layers {

// Makes the batch norm layer of `num_features` channels (with the model's eps and momentum, PyTorch's
// meaning) wherever a model has one; empty: BatchNorm2d. The distributed trainer passes one that makes
// dist::SyncBatchNorm2d (--sync-bn): same parameters, buffers and state-dict names, so checkpoints do not
// depend on it.
using BatchNormFactory = std::function<std::unique_ptr<Layer>(int num_features, double eps, double momentum)>;

// The names build_model knows. It also takes the path of an ONNX file ("my_net.onnx"): the model read
// from it (layers/onnx/onnx_model.h), checked against the input size and the class count.
std::vector<std::string> model_names();

// A model for inputs [N, in_channels, height, width] with num_classes outputs; not finalized (call
// Model::finalize with a context and a seed). Throws engine::Error for an unknown name (listing the known
// ones) or an input size the model does not accept. new_head: an ONNX file's classifier replaced by one of
// num_classes outputs (onnx::ImportOptions::new_head; refused for the zoo's names, which have no file).
Model build_model(std::string_view name, int in_channels, int num_classes, int height, int width,
                  const BatchNormFactory& make_batchnorm = {}, bool new_head = false);

}  // namespace engine::layers
