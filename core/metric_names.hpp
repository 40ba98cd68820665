#pragma once
// The names of the metrics that the tool itself reads or writes in an
// Outcome's `metrics` (docs/output.md says what each means). A workload may
// report any other name; these are the ones whose spelling matters to the
// code, so they are spelled once, each with the kind of value it holds, and
// are written and read only through Outcome::set, get and has (a named,
// typed parameter, as nvbench's). To add one: declare it here with its kind,
// and say what it means in docs/output.md.
#include <string>

namespace autotune::metric {

// A quantity: seconds, bytes, cores, a share, a rate, a factor.
struct Real {
  const char* name;
};
// A whole number: steps, windows, repeats, processes, a rank.
struct Count {
  const char* name;
};
// 1 when it happened; absent (or 0) when not.
struct Flag {
  const char* name;
};

// Memory: peaks measured, and the estimates made before a trial.
inline constexpr Real ram_bytes{"ram_bytes"};
inline constexpr Real ram_baseline_bytes{"ram_baseline_bytes"};
inline constexpr Real ram_estimate_bytes{"ram_estimate_bytes"};
inline constexpr Real vram_bytes{"vram_bytes"};
inline constexpr Real vram_estimate_bytes{"vram_estimate_bytes"};
inline constexpr Real vram_own_bytes{"vram_own_bytes"};
inline constexpr Real vram_context_bytes{"vram_context_bytes"};

// Where the time went: the busy share (Outcome::busy reads these three).
inline constexpr Real compute_busy{"compute_busy"};
inline constexpr Real data_wait_fraction{"data_wait_fraction"};
inline constexpr Real gpu_busy{"gpu_busy"};
inline constexpr Real starved_share{"starved_share"};
inline constexpr Real cpu_cores{"cpu_cores"};
// Cores' worth of CPU that processes outside autotune's tree used while the
// trial ran (tuner/run/machine_load.hpp): the machine's other work.
inline constexpr Real foreign_cores{"foreign_cores"};
// Other processes' use at or above which the machine counts as busy, in cores.
inline constexpr double kBusyCores = 0.5;
// ... and on the machine's GPUs: compute processes outside autotune's tree
// and the device memory they held, the most seen at the trial's start or end.
inline constexpr Count foreign_gpu_processes{"foreign_gpu_processes"};
inline constexpr Real foreign_gpu_bytes{"foreign_gpu_bytes"};
// ... and the share of the trial's GPUs' SM time those processes took over
// the trial (0..1; where NVML is there to say, tuner/run/nvml_reader.hpp).
inline constexpr Real foreign_gpu_busy{"foreign_gpu_busy"};
// Drift control (tuner/record/drift.hpp): a search trial's figure as
// measured, and the factor that reads it against the control nearest it.
inline constexpr Real throughput_measured{"throughput_measured"};
inline constexpr Real drift{"drift"};

// The measurement (workloads/measure.hpp) and how it stopped.
inline constexpr Real throughput_rsd{"throughput_rsd"};
inline constexpr Real throughput_ci90{"throughput_ci90"};
inline constexpr Real throughput_mean{"throughput_mean"};
inline constexpr Real throughput_search{"throughput_search"};
inline constexpr Count windows{"windows"};
inline constexpr Count mean_windows{"mean_windows"};
inline constexpr Count repeats{"repeats"};
inline constexpr Flag raced{"raced"};
inline constexpr Flag settled_early{"settled_early"};
inline constexpr Flag stopped_by_rsd{"stopped_by_rsd"};
inline constexpr Flag stopped_on_scatter{"stopped_on_scatter"};
inline constexpr Flag stopped_on_precision{"stopped_on_precision"};
inline constexpr Flag stopped_after_result{"stopped_after_result"};
inline constexpr Flag warmup_complete{"warmup_complete"};
inline constexpr Flag warmup_drained{"warmup_drained"};
inline constexpr Flag warmup_ahead{"warmup_ahead"};
inline constexpr Count warmup_steps{"warmup_steps"};
inline constexpr Real warmup_seconds{"warmup_seconds"};
inline constexpr Count timed_steps{"timed_steps"};
inline constexpr Real measure_seconds{"measure_seconds"};
inline constexpr Real startup_seconds{"startup_seconds"};

// A warm trial (workload `warm: true`): 1 on the trial that started its
// slot's worker (it paid the job's start-up), and 1 when that worker then
// ended by itself without entering autotune_trial.trials() (after a good
// trial, or a failed one that never said it entered), so every trial runs
// cold.
inline constexpr Flag worker_started{"worker_started"};
inline constexpr Flag warm_ran_cold{"warm_ran_cold"};
// 1 on the trial before which the slot's worker was replaced because its
// resident memory had grown between trials (a leak; proc/subprocess.hpp).
inline constexpr Flag worker_replaced{"worker_replaced"};

// A job of several data-parallel ranks (python/autotune_trial/_ranks.py):
// its world size, the slowest and fastest ranks' paces and which rank is the
// slowest, the most any rank waited for data and which; each rank's own are
// rank<k>_pace and rank<k>_data_wait (rank_metric: names made at run time,
// read with Outcome::metric).
inline constexpr Count world_size{"world_size"};
inline constexpr Real rank_pace_min{"rank_pace_min"};
inline constexpr Real rank_pace_max{"rank_pace_max"};
inline constexpr Count rank_slowest{"rank_slowest"};
inline constexpr Real rank_data_wait_max{"rank_data_wait_max"};
inline constexpr Count rank_waiting_most{"rank_waiting_most"};
inline std::string rank_metric(long rank, const char* what) { return "rank" + std::to_string(rank) + "_" + what; }

// The built-in cuda harness (workloads/cuda/cuda_workload.hpp): the step's
// device time, the loader gate's timeouts, the GEMM and model TFLOP/s, and
// under fp16 the steps the loss scaler skipped and its last scale.
inline constexpr Real step_device_seconds{"step_device_seconds"};
inline constexpr Count gate_timeouts{"gate_timeouts"};
inline constexpr Real gemm_tflops{"gemm_tflops"};
inline constexpr Real model_tflops{"model_tflops"};
inline constexpr Count skipped_steps{"skipped_steps"};
inline constexpr Real loss_scale{"loss_scale"};

// The training itself.
inline constexpr Real loss{"loss"};

}  // namespace autotune::metric
