#pragma once
// The small kernels of the GPU MLP, behind host launchers that take the
// element type as a value, so that host code needs no CUDA half types.
// Matrices are column-major, one column per sample. Every launcher checks
// the launch (AUTOTUNE_CUDA_CHECK_LAUNCH) and throws CudaError.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace autotune::cuda {

enum class DType { f32, f16, bf16 };
std::size_t dtype_bytes(DType t);

// dst[i] = (T) src[i]
void launch_cast_from_f32(DType t, const float* src, void* dst, std::size_t n, cudaStream_t s);
// h(r, c) = relu(z(r, c) + bias(r)) as T
void launch_bias_relu(DType t, const float* z, const float* bias, void* h, int rows, int cols, cudaStream_t s);
// Per column: p = softmax(logits + bias); loss_sum += -log p[label];
// dlogits = (p - onehot(label)) * scale, as T (scale folds 1/samples and the loss scale).
void launch_softmax_xent(DType t, const float* logits, const float* bias, const std::int32_t* labels, void* dlogits,
                         float* loss_sum, int classes, int cols, float scale, cudaStream_t s);
// dz = dh where h > 0, else 0; dz as T, h as T.
void launch_relu_backward(DType t, const float* dh, const void* h, void* dz, std::size_t n, cudaStream_t s);
// gb(r) += sum_c g(r, c), g as T.
void launch_bias_grad(DType t, const void* g, float* gb, int rows, int cols, cudaStream_t s);
// *flag = 1 if any g[i] is not finite (flag is not cleared here).
void launch_check_finite(const float* g, std::size_t n, int* flag, cudaStream_t s);

struct OptimizerStep {
  bool adam = true;
  float lr = 1e-3f;
  float beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f;
  float bias_correction1 = 1, bias_correction2 = 1;  // 1 - beta^t
  float grad_unscale = 1;                            // 1 / loss scale
};
// Unless *skip: w -= update(g * grad_unscale) (Adam moments m, v; SGD when
// !adam) and, when w_copy is not null, w_copy = (T) w. Always: g = 0.
void launch_optimizer(DType t, const OptimizerStep& o, float* w, void* w_copy, float* g, float* m, float* v,
                      std::size_t n, const int* skip, cudaStream_t s);

}  // namespace autotune::cuda
