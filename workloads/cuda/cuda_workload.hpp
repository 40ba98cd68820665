#pragma once
// The cuda workload: the harness's loader feeding an MLP trained on the GPU
// (gpu_mlp.hpp), measured as workloads/measure.hpp says.
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
// Outcomes: `error` without a device or driver (with the runtime's reason),
// `oom` on cudaErrorMemoryAllocation or past the spec's vram limit, `invalid`
// past the ram limit. Metrics: throughput_rsd, stopped_by_rsd, gpu_busy
// (compute time by events / wall time), vram_bytes (peak device memory in use:
// the context and libraries plus the harness's allocations, from
// cudaMemGetInfo), vram_own_bytes, vram_context_bytes, gemm_tflops (the
// largest layer's GEMM alone at this batch and precision), model_tflops
// (training FLOPs per second achieved through the whole pipeline),
// skipped_steps and loss_scale (fp16), ram_bytes, ram_baseline_bytes, loss.
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
