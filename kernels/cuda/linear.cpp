// Linear through cuBLAS. cuBLAS is column-major; our matrices are row-major. A row-major [r, c] matrix M is,
// byte for byte, the column-major [c, r] matrix M^T with leading dimension c. So every product is computed
// transposed, C^T = op(B)^T op(A)^T, which cuBLAS sees as ordinary column-major operands:
//   y  = x W^T   [N, out]  <=>  y^T  [out, N] = W [out, in] . x^T [in, N]
//        W is stored as column-major W^T [in, out] (ld in): op T.  x^T: column-major [in, N] (ld in): op N.
//   dx = dy W    [N, in]   <=>  dx^T [in, N]  = W^T [in, out] . dy^T [out, N]
//        W^T: W's storage as is (ld in): op N.  dy^T: dy's storage (ld out): op N.
//   dW = dy^T x  [out, in] <=>  dW^T [in, out] = x^T [in, N] . dy [N, out]
//        x^T: x's storage (ld in): op N.  dy: the transpose of dy's storage dy^T [out, N] (ld out): op T.
// beta = 0 overwrites the outputs. The compute type is the handles' (fp32, or fast-TF32 when allowed) for
// float32 data; CUBLAS_COMPUTE_32F for bf16 operands (tensor cores, exact products, fp32 accumulation: the
// handles forbid split-K reductions in the bf16 output type, kernels/cuda/handles.h).
// bf16 GEMMs write bf16 y and dx; dW is written in fp32 (cublasGemmEx allows a CUDA_R_32F C with
// CUDA_R_16BF A and B under CUBLAS_COMPUTE_32F) straight into the gradient, then rounded there to its bf16
// value: the same number as autocast's bf16 dW cast up, without a bf16 scratch and a cast.
#include "kernels/cuda/linear.h"

#include "core/cuda_check.h"
#include "core/error.h"
#include "kernels/cuda/bias.h"
#include "kernels/cuda/cast.h"
#include "kernels/cuda/handles.h"
#include "kernels/cuda/nvtx.h"

namespace engine::cuda {
namespace {

// C [m, n] (column-major, ld ldc) = op(A) [m, k] . op(B) [k, n], fp32 storage.
void gemm(CudaHandles& h, cublasOperation_t op_a, cublasOperation_t op_b, int m, int n, int k, const float* a,
          int lda, const float* b, int ldb, float* c, int ldc) {
  const float one = 1.0f, zero = 0.0f;
  CUBLAS_CHECK(cublasGemmEx(h.cublas(), op_a, op_b, m, n, k, &one, a, CUDA_R_32F, lda, b, CUDA_R_32F, ldb,
                            &zero, c, CUDA_R_32F, ldc, h.cublas_compute_type(), CUBLAS_GEMM_DEFAULT));
}

// The same with bf16 A and B, C of type c_type (CUDA_R_16BF or CUDA_R_32F), fp32 compute and scaling.
void gemm_bf16(CudaHandles& h, cublasOperation_t op_a, cublasOperation_t op_b, int m, int n, int k,
               const bfloat16* a, int lda, const bfloat16* b, int ldb, void* c, cudaDataType_t c_type,
               int ldc) {
  const float one = 1.0f, zero = 0.0f;
  CUBLAS_CHECK(cublasGemmEx(h.cublas(), op_a, op_b, m, n, k, &one, a, CUDA_R_16BF, lda, b, CUDA_R_16BF, ldb,
                            &zero, c, c_type, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

}  // namespace

void linear_forward(CudaHandles& handles, cudaStream_t stream, const LinearShape& s, const float* x,
                    const float* w, const float* bias, float* y) {
  ENGINE_NVTX_RANGE("linear_forward");
  s.validate();
  ENGINE_CHECK(x != nullptr && w != nullptr && y != nullptr, "linear_forward: x, w and y must not be null");
  handles.bind(stream);
  gemm(handles, CUBLAS_OP_T, CUBLAS_OP_N, s.out_features, s.n, s.in_features, w, s.in_features, x,
       s.in_features, y, s.out_features);
  if (bias != nullptr) bias_add_rows(stream, y, bias, s.n, s.out_features);
}

void linear_backward(CudaHandles& handles, cudaStream_t stream, const LinearShape& s, const float* x,
                     const float* w, const float* dy, float* dx, float* dw, float* db) {
  ENGINE_NVTX_RANGE("linear_backward");
  s.validate();
  ENGINE_CHECK(x != nullptr && w != nullptr && dy != nullptr && dw != nullptr,
               "linear_backward: x, w, dy and dw must not be null");
  handles.bind(stream);
  if (dx != nullptr) {
    gemm(handles, CUBLAS_OP_N, CUBLAS_OP_N, s.in_features, s.n, s.out_features, w, s.in_features, dy,
         s.out_features, dx, s.in_features);
  }
  gemm(handles, CUBLAS_OP_N, CUBLAS_OP_T, s.in_features, s.out_features, s.n, x, s.in_features, dy,
       s.out_features, dw, s.in_features);
  if (db != nullptr) bias_grad_rows(stream, dy, db, s.n, s.out_features);
}

void linear_forward_bf16(CudaHandles& handles, cudaStream_t stream, const LinearShape& s, const bfloat16* x,
                         const bfloat16* w, const float* bias, bfloat16* y) {
  ENGINE_NVTX_RANGE("linear_forward_bf16");
  s.validate();
  ENGINE_CHECK(x != nullptr && w != nullptr && y != nullptr,
               "linear_forward_bf16: x, w and y must not be null");
  handles.bind(stream);
  gemm_bf16(handles, CUBLAS_OP_T, CUBLAS_OP_N, s.out_features, s.n, s.in_features, w, s.in_features, x,
            s.in_features, y, CUDA_R_16BF, s.out_features);
  if (bias != nullptr) bias_add_rows(stream, y, bias, s.n, s.out_features);
}

void linear_backward_bf16(CudaHandles& handles, cudaStream_t stream, const LinearShape& s, const bfloat16* x,
                          const bfloat16* w, const bfloat16* dy, bfloat16* dx, float* dw, float* db) {
  ENGINE_NVTX_RANGE("linear_backward_bf16");
  s.validate();
  ENGINE_CHECK(x != nullptr && w != nullptr && dy != nullptr && dw != nullptr,
               "linear_backward_bf16: x, w, dy and dw must not be null");
  handles.bind(stream);
  if (dx != nullptr) {
    gemm_bf16(handles, CUBLAS_OP_N, CUBLAS_OP_N, s.in_features, s.n, s.out_features, w, s.in_features, dy,
              s.out_features, dx, CUDA_R_16BF, s.in_features);
  }
  gemm_bf16(handles, CUBLAS_OP_N, CUBLAS_OP_T, s.in_features, s.out_features, s.n, x, s.in_features, dy,
            s.out_features, dw, CUDA_R_32F, s.in_features);
  round_to_bf16_values(stream, dw, dw, static_cast<std::int64_t>(s.w_size()));
  if (db != nullptr) {
    bias_grad_rows(stream, dy, db, s.n, s.out_features);
    round_to_bf16_values(stream, db, db, s.out_features);
  }
}

}  // namespace engine::cuda
