#pragma once
// The small kernels of the GPU MLP, behind host launchers that take the
// element type as a value, so that host code needs no CUDA half types.
// Matrices are column-major, one column per sample. Every launcher checks
// the launch (AUTOTUNE_CUDA_CHECK_LAUNCH) and throws CudaError.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "workloads/cuda/train_state.hpp"

namespace autotune::cuda {

enum class DType { f32, f16, bf16 };
std::size_t dtype_bytes(DType t);

// dst[i] = (T) src[i]
void launch_cast_from_f32(DType t, const float* src, void* dst, std::size_t n, cudaStream_t s);
// h(r, c) = relu(z(r, c) + bias(r)) as T
void launch_bias_relu(DType t, const float* z, const float* bias, void* h, int rows, int cols, cudaStream_t s);
// Per column: p = softmax(logits + bias); state->loss_sum += -log p[label];
// dlogits = (p - onehot(label)) * scale * state->loss_scale, as T (scale is
// 1/samples; the loss scale is read on the device, so the host never waits for it).
void launch_softmax_xent(DType t, const float* logits, const float* bias, const std::int32_t* labels, void* dlogits,
                         TrainState* state, int classes, int cols, float scale, cudaStream_t s);
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
  bool scaled = false;  // fp16: unscale by state->loss_scale, skip when state->found_inf
};
// Unless skipped: w -= update(g / loss scale) (Adam moments m, v, bias
// correction from state->applied_steps + 1; SGD when !adam) and, when w_copy
// is not null, w_copy = (T) w. Always: g = 0. Reads the state, never writes it.
void launch_optimizer(DType t, const OptimizerStep& o, float* w, void* w_copy, float* g, float* m, float* v,
                      std::size_t n, const TrainState* state, cudaStream_t s);
// One thread: *report = end_step_report(*state, scaled) (train_state.hpp).
void launch_end_step(TrainState* state, TrainState* report, bool scaled, cudaStream_t s);

// A host-released gate: the stream waits here until *flag >= ticket (flag in
// mapped page-locked memory, written by the host), so that an event recorded
// after it starts when the host has finished queueing the work behind it.
// Gives up after timeout_ns (counting it in *timeouts) so that a gate the
// host never opens cannot hang the process.
void launch_gate(const volatile unsigned* flag, unsigned ticket, unsigned* timeouts, unsigned long long timeout_ns,
                 cudaStream_t s);

// cudaSuccess when this module has code the current device runs, else the
// runtime's reason (cudaErrorNoKernelImageForDevice...). Clears the error.
cudaError_t kernel_image_status() noexcept;

}  // namespace autotune::cuda
