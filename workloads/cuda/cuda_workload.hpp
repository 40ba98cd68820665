#pragma once
// The cuda workload: the harness's loader feeding an MLP trained on the GPU
// (gpu_mlp.hpp, its step cuda_trainer.hpp), one trial as workloads/harness.hpp
// runs it, measured as workloads/measure.hpp says.
//
// Tuned parameters it reads: batch_size (samples per micro-batch),
// num_workers, prefetch_factor, pin_memory, precision (fp32, tf32, fp16,
// bf16) and grad_accum.
//
// pin_memory true: the loader's batch buffers are page-locked (cudaHostAlloc,
// allocated once) and each batch is copied with cudaMemcpyAsync on a copy
// stream into one of two device buffers while the previous batch computes;
// events order copy and compute. false: pageable buffers and a synchronous
// cudaMemcpy, which waits for the queued compute and blocks the host.
//
// Per optimizer step the host queues the step, then waits for the step
// before it (an event) and reads that step's loss and fp16 loss scale, which
// stay on the device (train_state.hpp): the device always has a step queued.
//
// Outcomes: `error` without a device or driver (with the runtime's reason),
// or when the module has no code for the card (naming the card, its compute
// capability and the architectures built, cuda_arch.hpp); `oom` on
// cudaErrorMemoryAllocation or past the spec's vram limit, also when the loss
// diverged too; `invalid` past the ram limit; every exception becomes an
// outcome (trial_outcome.hpp), none leaves the module. Metrics:
// throughput_rsd, stopped_by_rsd, gpu_busy (the device time of one step,
// timed behind a host-released gate after the measurement, times the steps
// per second; trial_outcome.hpp), step_device_seconds, gate_timeouts (must be
// 0), vram_bytes (peak device memory in use: the context and libraries plus
// the harness's allocations, from cudaMemGetInfo), vram_own_bytes,
// vram_context_bytes, gemm_tflops (the largest layer's GEMM alone at this
// batch and precision), model_tflops (training FLOPs per second achieved
// through the whole pipeline), skipped_steps and loss_scale (fp16),
// ram_bytes, ram_baseline_bytes, loss (the last step's mean).
//
// Options beyond the model and pipeline: device, fp32_math (default: cuBLAS's
// CUBLAS_COMPUTE_32F as PyTorch; pedantic: CUBLAS_COMPUTE_32F_PEDANTIC).
//
// This file and the rest of workloads/cuda/ build libautotune_cuda.so, which
// the workloads library loads on the first cuda measurement
// (workloads/cuda_module.hpp); the schema is in workloads/cuda_workload_info.cpp.
#include "workloads/workload.hpp"

namespace autotune {

// Devices the CUDA runtime sees; 0 without a device or a driver. Never throws.
// It initialises the CUDA driver in this process: a process that forks trial
// children must not call it first (CUDA does not survive fork), so the tuner
// should ask in a child, or look for /dev/nvidia0, instead.
int cuda_device_count() noexcept;

}  // namespace autotune
