#pragma once
// The names of the metrics that the tool itself reads or writes in an
// Outcome's `metrics` (docs/output.md says what each means). A workload may
// report any other name; these are the ones whose spelling matters to the
// code, so they are spelled once.
#include <string>

namespace autotune::metric {

// Memory: peaks measured, and the estimates made before a trial.
inline constexpr const char* ram_bytes = "ram_bytes";
inline constexpr const char* ram_baseline_bytes = "ram_baseline_bytes";
inline constexpr const char* ram_estimate_bytes = "ram_estimate_bytes";
inline constexpr const char* vram_bytes = "vram_bytes";
inline constexpr const char* vram_estimate_bytes = "vram_estimate_bytes";
inline constexpr const char* vram_own_bytes = "vram_own_bytes";
inline constexpr const char* vram_context_bytes = "vram_context_bytes";

// Where the time went: the busy share (Outcome::busy reads these three).
inline constexpr const char* compute_busy = "compute_busy";
inline constexpr const char* data_wait_fraction = "data_wait_fraction";
inline constexpr const char* gpu_busy = "gpu_busy";
inline constexpr const char* starved_share = "starved_share";
inline constexpr const char* cpu_cores = "cpu_cores";
// Cores' worth of CPU that processes outside autotune's tree used while the
// trial ran (tuner/run/machine_load.hpp): the machine's other work.
inline constexpr const char* foreign_cores = "foreign_cores";
// Other processes' use at or above which the machine counts as busy, in cores.
inline constexpr double kBusyCores = 0.5;
// ... and on the machine's GPUs: compute processes outside autotune's tree
// and the device memory they held, the most seen at the trial's start or end.
inline constexpr const char* foreign_gpu_processes = "foreign_gpu_processes";
inline constexpr const char* foreign_gpu_bytes = "foreign_gpu_bytes";
// ... and the share of the trial's GPUs' SM time those processes took over
// the trial (0..1; where NVML is there to say, tuner/run/nvml_reader.hpp).
inline constexpr const char* foreign_gpu_busy = "foreign_gpu_busy";
// Drift control (tuner/record/drift.hpp): a search trial's figure as
// measured, and the factor that reads it against the control nearest it.
inline constexpr const char* throughput_measured = "throughput_measured";
inline constexpr const char* drift = "drift";

// The measurement (workloads/measure.hpp) and how it stopped.
inline constexpr const char* throughput_rsd = "throughput_rsd";
inline constexpr const char* throughput_ci90 = "throughput_ci90";
inline constexpr const char* throughput_mean = "throughput_mean";
inline constexpr const char* throughput_search = "throughput_search";
inline constexpr const char* windows = "windows";
inline constexpr const char* mean_windows = "mean_windows";
inline constexpr const char* repeats = "repeats";
inline constexpr const char* raced = "raced";
inline constexpr const char* settled_early = "settled_early";
inline constexpr const char* stopped_by_rsd = "stopped_by_rsd";
inline constexpr const char* stopped_on_scatter = "stopped_on_scatter";
inline constexpr const char* stopped_on_precision = "stopped_on_precision";
inline constexpr const char* stopped_after_result = "stopped_after_result";
inline constexpr const char* warmup_complete = "warmup_complete";
inline constexpr const char* warmup_drained = "warmup_drained";
inline constexpr const char* warmup_ahead = "warmup_ahead";
inline constexpr const char* warmup_steps = "warmup_steps";
inline constexpr const char* warmup_seconds = "warmup_seconds";
inline constexpr const char* timed_steps = "timed_steps";
inline constexpr const char* measure_seconds = "measure_seconds";
inline constexpr const char* startup_seconds = "startup_seconds";

// A warm trial (workload `warm: true`): 1 on the trial that started its
// slot's worker (it paid the job's start-up), and 1 when that worker then
// ended by itself without entering autotune_trial.trials() (after a good
// trial, or a failed one that never said it entered), so every trial runs
// cold.
inline constexpr const char* worker_started = "worker_started";
inline constexpr const char* warm_ran_cold = "warm_ran_cold";
// 1 on the trial before which the slot's worker was replaced because its
// resident memory had grown between trials (a leak; proc/subprocess.hpp).
inline constexpr const char* worker_replaced = "worker_replaced";

// A job of several data-parallel ranks (python/autotune_trial/_ranks.py):
// its world size, the slowest and fastest ranks' paces and which rank is the
// slowest, the most any rank waited for data and which; each rank's own are
// rank<k>_pace and rank<k>_data_wait (rank_metric).
inline constexpr const char* world_size = "world_size";
inline constexpr const char* rank_pace_min = "rank_pace_min";
inline constexpr const char* rank_pace_max = "rank_pace_max";
inline constexpr const char* rank_slowest = "rank_slowest";
inline constexpr const char* rank_data_wait_max = "rank_data_wait_max";
inline constexpr const char* rank_waiting_most = "rank_waiting_most";
inline std::string rank_metric(long rank, const char* what) { return "rank" + std::to_string(rank) + "_" + what; }

// The built-in cuda harness (workloads/cuda/cuda_workload.hpp): the step's
// device time, the loader gate's timeouts, the GEMM and model TFLOP/s, and
// under fp16 the steps the loss scaler skipped and its last scale.
inline constexpr const char* step_device_seconds = "step_device_seconds";
inline constexpr const char* gate_timeouts = "gate_timeouts";
inline constexpr const char* gemm_tflops = "gemm_tflops";
inline constexpr const char* model_tflops = "model_tflops";
inline constexpr const char* skipped_steps = "skipped_steps";
inline constexpr const char* loss_scale = "loss_scale";

// The training itself.
inline constexpr const char* loss = "loss";

}  // namespace autotune::metric
