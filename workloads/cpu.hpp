#pragma once
// The cpu workload: the harness's pipeline (workloads/loader.hpp) feeding an
// MLP trained with Eigen in FP32, one trial as workloads/harness.hpp runs it,
// measured as workloads/measure.hpp says.
// For machines without a GPU: real threads, real compute, real memory.
//
// Tuned parameters it reads: batch_size (samples per micro-batch),
// num_workers, prefetch_factor, grad_accum (micro-batches per optimizer
// step), precision (fp32 only: anything else is an `error` outcome) and
// pin_memory (accepted, no effect: there is no device to copy to).
//
// Metrics: throughput_rsd, stopped_by_rsd, compute_busy (compute time / wall
// time), data_wait_fraction, ram_bytes (peak resident set of the process),
// ram_baseline_bytes (resident set when the trial began), ram_estimate_bytes,
// loss, and the measurement counters of add_measure_metrics.
#include "workloads/workload.hpp"

namespace autotune {

WorkloadInfo cpu_workload_info();

}  // namespace autotune
