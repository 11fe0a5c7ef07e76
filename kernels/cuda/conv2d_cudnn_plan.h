#pragma once
// Internal to conv2d_cudnn.cpp and handles.cpp: the per-shape cuDNN convolution plan and its cache.
//
// A plan owns its descriptors (RAII) and remembers, per direction, the algorithm chosen the first time that
// direction ran for this shape and the workspace size it needs. The cache is a std::map keyed by every
// field of Conv2dShape and the layout; it lives in CudaHandles because the choice depends on the device and
// the math mode the handles stand for.

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
  void set_nchw(int n, int c, int h, int w) {
    CUDNN_CHECK(cudnnSetTensor4dDescriptor(desc_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, c, h, w));
  }
  // The logical [n, c, h, w] stored channels last.
  void set_nhwc(int n, int c, int h, int w) {
    CUDNN_CHECK(cudnnSetTensor4dDescriptor(desc_, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, n, c, h, w));
  }
  void set(Layout layout, int n, int c, int h, int w) {
    if (layout == Layout::NHWC) {
      set_nhwc(n, c, h, w);
    } else {
      set_nchw(n, c, h, w);
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
  void set_kcrs(int k, int c, int r, int s) {
    CUDNN_CHECK(cudnnSetFilter4dDescriptor(desc_, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, k, c, r, s));
  }
  // The logical [k, c, r, s] stored as [K, R, S, C] (the filter of an NHWC convolution).
  void set_krsc(int k, int c, int r, int s) {
    CUDNN_CHECK(cudnnSetFilter4dDescriptor(desc_, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NHWC, k, c, r, s));
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
  // this direction (cuDNN picks tensor-core kernels from algorithm + math type). Always CUDNN_FMA_MATH
  // unless TF32 is allowed.
  cudnnMathType_t math_type = CUDNN_FMA_MATH;
  std::size_t workspace_bytes = 0;
};

struct CudnnConvPlan {
  TensorDescriptor x, y;
  FilterDescriptor w;
  ConvolutionDescriptor conv;
  ChosenAlgo<cudnnConvolutionFwdAlgo_t> forward;
  ChosenAlgo<cudnnConvolutionBwdDataAlgo_t> backward_data;
  ChosenAlgo<cudnnConvolutionBwdFilterAlgo_t> backward_filter;
};

using ConvKey = std::array<int, 12>;

inline ConvKey conv_key(const Conv2dShape& s, Layout layout) {
  return {s.n, s.c,        s.h,        s.w,     s.k,     s.r,
          s.s, s.stride_h, s.stride_w, s.pad_h, s.pad_w, static_cast<int>(layout)};
}

struct CudnnConvPlans {
  std::map<ConvKey, std::unique_ptr<CudnnConvPlan>> plans;
};

}  // namespace engine::cuda::detail
