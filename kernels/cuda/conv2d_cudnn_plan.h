#pragma once
// Internal to conv2d_cudnn.cpp and handles.cpp: the per-shape cuDNN convolution plan and its cache.
//
// A plan owns its descriptors (RAII) and remembers, per direction, the algorithm chosen the first time that
// direction ran for this shape and the workspace size it needs. The cache is a std::map keyed by every
// field of Conv2dShape, the data type and the layout; it lives in CudaHandles because the choice depends on
// the device and the math mode the handles stand for.

#include <array>
#include <cstddef>
#include <map>
#include <memory>

#include <cudnn.h>

#include "core/cuda_check.h"
#include "core/layout.h"
#include "kernels/cpu/conv2d.h"

namespace engine::cuda::detail {

class TensorDescriptor {
 public:
  TensorDescriptor() { CUDNN_CHECK(cudnnCreateTensorDescriptor(&desc_)); }
  ~TensorDescriptor() { (void)cudnnDestroyTensorDescriptor(desc_); }
  TensorDescriptor(const TensorDescriptor&) = delete;
  TensorDescriptor& operator=(const TensorDescriptor&) = delete;
  void set_nchw(int n, int c, int h, int w, cudnnDataType_t type) {
    CUDNN_CHECK(cudnnSetTensor4dDescriptor(desc_, CUDNN_TENSOR_NCHW, type, n, c, h, w));
  }
  // The logical [n, c, h, w] stored channels last.
  void set_nhwc(int n, int c, int h, int w, cudnnDataType_t type) {
    CUDNN_CHECK(cudnnSetTensor4dDescriptor(desc_, CUDNN_TENSOR_NHWC, type, n, c, h, w));
  }
  void set(Layout layout, int n, int c, int h, int w, cudnnDataType_t type) {
    if (layout == Layout::NHWC) {
      set_nhwc(n, c, h, w, type);
    } else {
      set_nchw(n, c, h, w, type);
    }
  }
  cudnnTensorDescriptor_t get() const { return desc_; }

 private:
  cudnnTensorDescriptor_t desc_ = nullptr;
};

class FilterDescriptor {
 public:
  FilterDescriptor() { CUDNN_CHECK(cudnnCreateFilterDescriptor(&desc_)); }
  ~FilterDescriptor() { (void)cudnnDestroyFilterDescriptor(desc_); }
  FilterDescriptor(const FilterDescriptor&) = delete;
  FilterDescriptor& operator=(const FilterDescriptor&) = delete;
  void set_kcrs(int k, int c, int r, int s, cudnnDataType_t type) {
    CUDNN_CHECK(cudnnSetFilter4dDescriptor(desc_, type, CUDNN_TENSOR_NCHW, k, c, r, s));
  }
  // The logical [k, c, r, s] stored as [K, R, S, C] (the filter of an NHWC convolution).
  void set_krsc(int k, int c, int r, int s, cudnnDataType_t type) {
    CUDNN_CHECK(cudnnSetFilter4dDescriptor(desc_, type, CUDNN_TENSOR_NHWC, k, c, r, s));
  }
  // The filter of a convolution in `layout`: [K, C, R, S] (NCHW) or [K, R, S, C] (NHWC).
  void set(Layout layout, int k, int c, int r, int s, cudnnDataType_t type) {
    if (layout == Layout::NHWC) {
      set_krsc(k, c, r, s, type);
    } else {
      set_kcrs(k, c, r, s, type);
    }
  }
  cudnnFilterDescriptor_t get() const { return desc_; }

 private:
  cudnnFilterDescriptor_t desc_ = nullptr;
};

class ConvolutionDescriptor {
 public:
  ConvolutionDescriptor() { CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&desc_)); }
  ~ConvolutionDescriptor() { (void)cudnnDestroyConvolutionDescriptor(desc_); }
  ConvolutionDescriptor(const ConvolutionDescriptor&) = delete;
  ConvolutionDescriptor& operator=(const ConvolutionDescriptor&) = delete;
  cudnnConvolutionDescriptor_t get() const { return desc_; }

 private:
  cudnnConvolutionDescriptor_t desc_ = nullptr;
};

template <typename Algo>
struct ChosenAlgo {
  bool ready = false;
  Algo algo{};
  // The math type cuDNN reported with the algorithm: set on the convolution descriptor before every call in
  // this direction (cuDNN picks tensor-core kernels from algorithm + math type). Always CUDNN_FMA_MATH for
  // float32 data unless TF32 is allowed; bf16 data runs what cuDNN reported (tensor-op math).
  cudnnMathType_t math_type = CUDNN_FMA_MATH;
  std::size_t workspace_bytes = 0;
};

struct CudnnConvPlan {
  // CUDNN_DATA_FLOAT, or CUDNN_DATA_BFLOAT16 (x, w, y and the gradients bf16; fp32 compute type).
  cudnnDataType_t data_type = CUDNN_DATA_FLOAT;
  Layout layout = Layout::NCHW;  // of x, y and (NHWC: [K, R, S, C]) the filter
  TensorDescriptor x, y;
  FilterDescriptor w;
  ConvolutionDescriptor conv;
  ChosenAlgo<cudnnConvolutionFwdAlgo_t> forward;
  ChosenAlgo<cudnnConvolutionBwdDataAlgo_t> backward_data;
  ChosenAlgo<cudnnConvolutionBwdFilterAlgo_t> backward_filter;
};

// Every field of the shape, the data type and the layout: a float32 and a bf16 convolution of one shape, or
// an NCHW and an NHWC one, are different plans.
using ConvKey = std::array<int, 16>;

inline ConvKey conv_key(const Conv2dShape& s, cudnnDataType_t type, Layout layout) {
  return {s.n,
          s.c,
          s.h,
          s.w,
          s.k,
          s.r,
          s.s,
          s.stride_h,
          s.stride_w,
          s.pad_h,
          s.pad_w,
          s.groups,
          s.dilation_h,
          s.dilation_w,
          static_cast<int>(type),
          static_cast<int>(layout)};
}

struct CudnnConvPlans {
  std::map<ConvKey, std::unique_ptr<CudnnConvPlan>> plans;
};

}  // namespace engine::cuda::detail
