#include "workloads/cuda/kernels.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>

#include "workloads/cuda/cuda_check.hpp"

namespace autotune::cuda {

namespace {

constexpr int kThreads = 256;

unsigned blocks_for(std::size_t n) {
  // Grid-stride loops below, so a capped grid covers any n.
  const std::size_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(std::max<std::size_t>(1, std::min<std::size_t>(b, 65535)));
}

template <class T>
__device__ __forceinline__ T from_float(float x);
template <>
__device__ __forceinline__ float from_float<float>(float x) { return x; }
template <>
__device__ __forceinline__ __half from_float<__half>(float x) { return __float2half_rn(x); }
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }

__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }

template <class T>
__global__ void cast_kernel(const float* src, T* dst, std::size_t n) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    dst[i] = from_float<T>(src[i]);
}

template <class T>
__global__ void bias_relu_kernel(const float* z, const float* bias, T* h, int rows, std::size_t n) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const float v = z[i] + bias[i % static_cast<std::size_t>(rows)];
    h[i] = from_float<T>(v > 0.0f ? v : 0.0f);
  }
}

__device__ __forceinline__ float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// One warp per sample; the lanes stride over the classes of its column
// (contiguous in column-major), so reads coalesce.
template <class T>
__global__ void softmax_xent_kernel(const float* logits, const float* bias, const std::int32_t* labels, T* dlogits,
                                    TrainState* state, int classes, int cols, float scale) {
  const int lane = threadIdx.x & 31;
  const int c = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  if (c >= cols) return;  // whole warps leave together: blockDim is a multiple of 32
  float* loss_sum = &state->loss_sum;
  scale *= state->loss_scale;
  const float* z = logits + static_cast<std::size_t>(c) * classes;
  T* d = dlogits + static_cast<std::size_t>(c) * classes;
  float mx = -INFINITY;
  for (int r = lane; r < classes; r += 32) mx = fmaxf(mx, z[r] + bias[r]);
  mx = warp_max(mx);
  float sum = 0.0f;
  for (int r = lane; r < classes; r += 32) sum += __expf(z[r] + bias[r] - mx);
  sum = warp_sum(sum);
  const int y = labels[c];
  for (int r = lane; r < classes; r += 32) {
    const float p = __expf(z[r] + bias[r] - mx) / sum;
    if (r == y) atomicAdd(loss_sum, -logf(fmaxf(p, 1e-30f)));
    d[r] = from_float<T>((p - (r == y ? 1.0f : 0.0f)) * scale);
  }
}

template <class T>
__global__ void relu_backward_kernel(const float* dh, const T* h, T* dz, std::size_t n) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    dz[i] = from_float<T>(to_float(h[i]) > 0.0f ? dh[i] : 0.0f);
}

constexpr int kBiasGradColumns = 64;

// Thread (row, column chunk): sums kBiasGradColumns columns of its row, then
// one atomic add. Consecutive threads read consecutive rows (coalesced).
template <class T>
__global__ void bias_grad_kernel(const T* g, float* gb, int rows, int cols) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  const int c0 = blockIdx.y * kBiasGradColumns;
  const int c1 = min(cols, c0 + kBiasGradColumns);
  float acc = 0.0f;
  for (int c = c0; c < c1; ++c) acc += to_float(g[static_cast<std::size_t>(c) * rows + r]);
  atomicAdd(&gb[r], acc);
}

__global__ void check_finite_kernel(const float* g, std::size_t n, int* flag) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    if (!isfinite(g[i])) *flag = 1;  // a benign race: every writer writes 1
}

template <class T>
__global__ void optimizer_kernel(OptimizerStep o, float* w, T* w_copy, float* g, float* m, float* v, std::size_t n,
                                 const TrainState* state) {
  const bool skipped = o.scaled && state->found_inf != 0;
  const float grad_unscale = o.scaled ? 1.0f / state->loss_scale : 1.0f;
  const float t = static_cast<float>(state->applied_steps + 1);
  const float bias_correction1 = 1.0f - powf(o.beta1, t);
  const float bias_correction2 = 1.0f - powf(o.beta2, t);
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    if (!skipped) {
      const float grad = g[i] * grad_unscale;
      float wi = w[i];
      if (o.adam) {
        const float mi = o.beta1 * m[i] + (1.0f - o.beta1) * grad;
        const float vi = o.beta2 * v[i] + (1.0f - o.beta2) * grad * grad;
        m[i] = mi;
        v[i] = vi;
        wi -= o.lr * (mi / bias_correction1) / (sqrtf(vi / bias_correction2) + o.eps);
      } else {
        wi -= o.lr * grad;
      }
      w[i] = wi;
      if (w_copy) w_copy[i] = from_float<T>(wi);
    }
    g[i] = 0.0f;
  }
}

__global__ void end_step_kernel(TrainState* state, TrainState* report, bool scaled) {
  *report = end_step_report(*state, scaled);
}

__device__ __forceinline__ unsigned long long global_nanoseconds() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void gate_kernel(const volatile unsigned* flag, unsigned ticket, unsigned* timeouts,
                            unsigned long long timeout_ns) {
  const unsigned long long t0 = global_nanoseconds();
  while (*flag < ticket) {
    if (global_nanoseconds() - t0 > timeout_ns) {
      // One gate runs at a time on a stream, so a plain increment is enough
      // (atomics on mapped host memory need PCIe atomics some hosts lack).
      *static_cast<volatile unsigned*>(timeouts) += 1u;
      return;
    }
#if __CUDA_ARCH__ >= 700
    __nanosleep(500);  // a poll over PCIe every half microsecond is plenty
#endif
  }
}

// Calls f with a null pointer of the element type of t.
template <class F>
void dispatch(DType t, F&& f) {
  switch (t) {
    case DType::f32: f(static_cast<float*>(nullptr)); break;
    case DType::f16: f(static_cast<__half*>(nullptr)); break;
    case DType::bf16: f(static_cast<__nv_bfloat16*>(nullptr)); break;
  }
}

}  // namespace

std::size_t dtype_bytes(DType t) { return t == DType::f32 ? 4 : 2; }

void launch_cast_from_f32(DType t, const float* src, void* dst, std::size_t n, cudaStream_t s) {
  if (n == 0) return;
  dispatch(t, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    cast_kernel<T><<<blocks_for(n), kThreads, 0, s>>>(src, static_cast<T*>(dst), n);
  });
  AUTOTUNE_CUDA_CHECK_LAUNCH();
}

void launch_bias_relu(DType t, const float* z, const float* bias, void* h, int rows, int cols, cudaStream_t s) {
  const std::size_t n = static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols);
  if (n == 0) return;
  dispatch(t, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    bias_relu_kernel<T><<<blocks_for(n), kThreads, 0, s>>>(z, bias, static_cast<T*>(h), rows, n);
  });
  AUTOTUNE_CUDA_CHECK_LAUNCH();
}

void launch_softmax_xent(DType t, const float* logits, const float* bias, const std::int32_t* labels, void* dlogits,
                         TrainState* state, int classes, int cols, float scale, cudaStream_t s) {
  if (cols == 0) return;
  constexpr int kWarpsPerBlock = kThreads / 32;
  const unsigned blocks = static_cast<unsigned>((cols + kWarpsPerBlock - 1) / kWarpsPerBlock);
  dispatch(t, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    softmax_xent_kernel<T><<<blocks, kThreads, 0, s>>>(logits, bias, labels, static_cast<T*>(dlogits), state,
                                                       classes, cols, scale);
  });
  AUTOTUNE_CUDA_CHECK_LAUNCH();
}

void launch_relu_backward(DType t, const float* dh, const void* h, void* dz, std::size_t n, cudaStream_t s) {
  if (n == 0) return;
  dispatch(t, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    relu_backward_kernel<T><<<blocks_for(n), kThreads, 0, s>>>(dh, static_cast<const T*>(h), static_cast<T*>(dz), n);
  });
  AUTOTUNE_CUDA_CHECK_LAUNCH();
}

void launch_bias_grad(DType t, const void* g, float* gb, int rows, int cols, cudaStream_t s) {
  if (rows == 0 || cols == 0) return;
  const dim3 blocks(static_cast<unsigned>((rows + kThreads - 1) / kThreads),
                    static_cast<unsigned>((cols + kBiasGradColumns - 1) / kBiasGradColumns));
  dispatch(t, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    bias_grad_kernel<T><<<blocks, kThreads, 0, s>>>(static_cast<const T*>(g), gb, rows, cols);
  });
  AUTOTUNE_CUDA_CHECK_LAUNCH();
}

void launch_check_finite(const float* g, std::size_t n, int* flag, cudaStream_t s) {
  if (n == 0) return;
  check_finite_kernel<<<blocks_for(n), kThreads, 0, s>>>(g, n, flag);
  AUTOTUNE_CUDA_CHECK_LAUNCH();
}

void launch_optimizer(DType t, const OptimizerStep& o, float* w, void* w_copy, float* g, float* m, float* v,
                      std::size_t n, const TrainState* state, cudaStream_t s) {
  if (n == 0) return;
  dispatch(t, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    optimizer_kernel<T><<<blocks_for(n), kThreads, 0, s>>>(o, w, static_cast<T*>(w_copy), g, m, v, n, state);
  });
  AUTOTUNE_CUDA_CHECK_LAUNCH();
}

void launch_end_step(TrainState* state, TrainState* report, bool scaled, cudaStream_t s) {
  end_step_kernel<<<1, 1, 0, s>>>(state, report, scaled);
  AUTOTUNE_CUDA_CHECK_LAUNCH();
}

void launch_gate(const volatile unsigned* flag, unsigned ticket, unsigned* timeouts, unsigned long long timeout_ns,
                 cudaStream_t s) {
  gate_kernel<<<1, 1, 0, s>>>(flag, ticket, timeouts, timeout_ns);
  AUTOTUNE_CUDA_CHECK_LAUNCH();
}

cudaError_t kernel_image_status() noexcept {
  // Asking for a kernel's attributes loads the module's code for the current
  // device (also under lazy loading), failing as a launch would.
  cudaFuncAttributes a{};
  const cudaError_t e = cudaFuncGetAttributes(&a, end_step_kernel);
  if (e != cudaSuccess) (void)cudaGetLastError();
  return e;
}

}  // namespace autotune::cuda
