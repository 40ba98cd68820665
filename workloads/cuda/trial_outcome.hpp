#pragma once
// The cuda workload's decisions that need no device, apart so that tests run
// them on the CPU: which outcome an exception becomes, in what order the end
// of a trial is judged, and what gpu_busy is made of.
#include <cstdint>
#include <exception>

#include "workloads/cuda/cuda_arch.hpp"
#include "workloads/workload.hpp"

namespace autotune::cuda {

// The outcome of a trial that threw. Everything is caught, so that nothing
// crosses the module's boundary (a trial then reports `error` instead of
// dying): CudaError is `oom` when it is an out-of-memory error, an error
// naming the card and the architectures built when the module has no code
// for the card, an error naming the card when cuBLAS says it lacks a feature
// (CUBLAS_STATUS_ARCH_MISMATCH), else `error`; std::bad_alloc is `host_oom`; std::system_error
// (threads the loader could not start) and any other exception are `error`
// with its message; a thrown non-exception is `error` too.
Outcome outcome_of_exception(std::exception_ptr e, const CardInfo& card);

// What a finished measurement ended with.
struct TrialEnd {
  double loss = 0;        // the last step's mean loss
  double vram_peak = 0;   // device memory in use at the peak, bytes
  double vram_limit = 0;  // the spec's vram limit, 0: none
  double ram_peak = 0;
  double ram_limit = 0;
};

// Judges a measured outcome `o` (status ok) in this order: over the vram
// limit -> `oom`; over the ram limit -> `invalid`; a non-finite loss ->
// `error`. Memory first: a configuration that does not fit is `oom` whether
// or not its loss also diverged, so the search learns the memory boundary.
void judge_trial_end(Outcome& o, const TrialEnd& e);

// gpu_busy: the device's execution time of one optimizer step (grad_accum
// micro-batches and the optimizer, timed behind a host-released gate so that
// no host launch gap is counted) times the steps per second the pipeline
// reached, at most 1. 0 when either is unknown.
double gpu_busy_fraction(double step_device_seconds, double samples_per_second, std::int64_t samples_per_step);

}  // namespace autotune::cuda
