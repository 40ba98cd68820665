#pragma once
// The synthetic workload: an analytic model of a training input pipeline, for
// tests and for studying strategies in seconds. Not a measurement of anything.
//
// Per micro-batch of B samples:
//   T_compute = launch + B * c_sample / speed(precision) / eff(B),  eff(B) = B / (B + B_half)
//   T_load    = B * c_preprocess / par(W)     (W workers on `cores` cores; beyond them
//                                              oversubscription costs a little)
//   T_copy    = B * sample_bytes / bandwidth(pin)      (overlaps compute when pinned)
//   T_opt     = optimizer step, amortised over grad_accum micro-batches
// With W = 0 the main thread loads inline: step = T_load + T_copy + T_compute + T_opt.
// With W > 0 loading overlaps: step = max(T_compute + T_opt + T_copy_sync, T_load) + stall,
// where the stall is the loader jitter that a queue of W * prefetch batches absorbs.
// U (gpu_busy) = T_compute / step. Device memory grows with B and precision,
// host memory with W * prefetch * B; past the profile's device memory the
// outcome is `oom`, past its host memory `host_oom`.
#include <optional>
#include <string>
#include <vector>

#include "workloads/workload.hpp"

namespace autotune {

struct SyntheticProfile {
  std::string name;
  std::string summary;
  double c_sample = 40e-6;       // fp32 compute seconds per sample at full efficiency
  double b_half = 24;            // batch size at half efficiency
  double launch = 2e-3;          // per-step fixed cost, s
  double t_opt = 6e-3;           // optimizer step, s
  double c_preprocess = 1.2e-3;  // CPU seconds per sample
  double cores = 8;              // host cores for loader workers
  double sample_bytes = 600e3;   // bytes per sample copied to the device
  double bw_pinned = 24e9;       // bytes/s
  double bw_pageable = 8e9;
  double jitter = 0.25;          // loader variability absorbed by prefetching
  double device_bytes = 16e9;    // device memory
  double host_bytes = 64e9;      // host memory
  double act_bytes = 40e6;       // fp32 activation bytes per sample
  double model_bytes = 1.5e9;    // weights + optimizer state + context
  double speed_tf32 = 2.0, speed_fp16 = 3.2, speed_bf16 = 3.0;
};

// The named profiles: balanced, loader_bound, compute_bound, memory_tight.
const std::vector<SyntheticProfile>& synthetic_profiles();
const SyntheticProfile* find_synthetic_profile(const std::string& name);

// The noise-free model: what the workload would measure with noise 0.
// Reads batch_size, num_workers, prefetch_factor, pin_memory, precision and
// grad_accum by name; an undeclared one takes a neutral default (32, 0, 2,
// false, fp32, 1). Other declared parameters have no effect.
Outcome synthetic_evaluate(const SyntheticProfile& p, const Assignment& config);

}  // namespace autotune
