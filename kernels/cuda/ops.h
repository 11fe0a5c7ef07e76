#pragma once
// Every CUDA op of the engine (namespace engine::cuda), one include for callers that want them all.
// Conventions shared by all of them:
//   - float32 storage, contiguous row-major (NCHW for images); raw device pointers, sizes as the CPU
//     reference's shape structs (kernels/cpu/*.h) so both paths take the same geometry;
//   - the cudaStream_t is explicit (library-backed ops also take the CudaHandles, bound to that stream);
//   - each launcher checks its sizes (engine::Error) and every launch is followed by ENGINE_LAUNCH_CHECK();
//   - backward functions OVERWRITE their outputs, like the CPU reference;
//   - everything is deterministic: reductions are split and finished in a fixed order, the
//     max-pool backward is a gather; cuDNN's backward algorithms are restricted to deterministic ones by
//     default (CudaHandlesOptions::deterministic).
// Flatten needs no kernel: it is Tensor::view on contiguous data.

#include "kernels/cuda/activation.h"
#include "kernels/cuda/avgpool.h"
#include "kernels/cuda/batchnorm2d.h"
#include "kernels/cuda/bias.h"
#include "kernels/cuda/conv2d_cudnn.h"
#include "kernels/cuda/conv2d_implicit_gemm.h"
#include "kernels/cuda/dropout.h"
#include "kernels/cuda/handles.h"
#include "kernels/cuda/linear.h"
#include "kernels/cuda/maxpool2d.h"
#include "kernels/cuda/relu.h"
#include "kernels/cuda/residual_add.h"
#include "kernels/cuda/sgd.h"
#include "kernels/cuda/softmax_cross_entropy.h"
