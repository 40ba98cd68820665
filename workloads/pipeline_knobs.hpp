#pragma once
// What the cpu and cuda workloads share besides the loader and the timing
// loop: the options that shape the input pipeline and the measurement, and
// how a configuration's tuned parameters (batch_size, num_workers,
// prefetch_factor, pin_memory, precision, grad_accum) become a LoaderConfig
// and a MeasureConfig.
//
// An undeclared parameter takes PyTorch's default (num_workers 0,
// prefetch_factor 2, pin_memory false), precision fp32, grad_accum 1 and
// batch_size 64.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/value.hpp"
#include "workloads/loader.hpp"
#include "workloads/measure.hpp"
#include "workloads/workload.hpp"

namespace autotune {

struct PipelineKnobs {
  LoaderConfig loader;
  MeasureConfig measure;
  std::int64_t grad_accum = 1;
  bool pin_memory = false;
  std::string precision = "fp32";
};

// Options of the pipeline and the measurement, for a workload's schema:
// sample_bytes, preprocess_passes, dataset_samples, warmup_seconds,
// warmup_until_drained, window_seconds, target_rsd, max_seconds, seed.
struct PipelineDefaults {
  std::int64_t sample_bytes = 4096;
  std::int64_t preprocess_passes = 4;
  std::int64_t dataset_samples = 2048;
  double max_seconds = 5.0;
  double window_seconds = 0.3;
};
std::vector<OptionSpec> pipeline_option_specs(const PipelineDefaults& d);

// The MLP's options, the same keys for the cpu and cuda workloads.
struct ModelDefaults {
  std::int64_t depth = 2;
  std::int64_t width = 256;
  std::int64_t input_dim = 256;
  std::int64_t classes = 10;
  double learning_rate = 1e-3;
  double max_depth = 64;
  double max_width = 65536;
};
std::vector<OptionSpec> model_option_specs(const ModelDefaults& d);
// The model's input is read from the expanded sample bytes: throws
// WorkloadConfigError naming `kind` when input_dim exceeds 2 * sample_bytes.
void check_model_fits_samples(const Options& o, std::string_view kind);

// A measured run whose peak host memory is over the spec's limit becomes
// `invalid`, saying by how much (limit 0: none).
void mark_if_over_ram_limit(Outcome& o, double ram_bytes, double ram_limit);

// Reads the options and the configuration; empty on success, else why the
// configuration is unusable (an `error` outcome). A trial timeout caps
// max_seconds at 80% of it.
std::string read_pipeline_knobs(const Options& opts, const Assignment& config, const TrialContext& ctx,
                                std::int64_t input_dim, int classes, PipelineKnobs& out);

// The metrics both workloads report from a measurement: throughput_rsd,
// stopped_by_rsd, settled_early and stopped_on_scatter (when so), warmup_complete, warmup_drained, warmup_ahead, warmup_steps,
// warmup_seconds, timed_steps, windows, mean_windows (those the throughput
// averages), measure_seconds, raced (when raced), and cpu_cores (CPU seconds per wall second over the timed
// part: how many cores the loader and trainer kept busy).
void add_measure_metrics(const MeasureResult& r, Outcome& o);

// Batches a loader prepares before the first step: each worker's queue of
// prefetch_factor plus the one in its hands (at least 1: inline, the first).
std::int64_t batches_before_first_step(std::int64_t workers, std::int64_t prefetch);

// The warm-up's counts, in the harness's steps: a step is a whole optimizer
// step of grad_accum micro-batches, each one batch from the loader. The
// backlog above is gone after ceil(batches / grad_accum) steps
// (m.warmup_min_steps), and every worker's queue has been read once after
// ceil(workers / grad_accum) (m.ahead_min_steps; 0 without workers). One
// setter for the cpu and cuda harnesses (read_pipeline_knobs) and the
// virtual clock.
void set_warmup_steps(MeasureConfig& m, std::int64_t workers, std::int64_t prefetch, std::int64_t grad_accum);

// How a modelled workload (synthetic, replay) times its trials, from its
// options simulated_time, warmup_until_drained, startup_seconds,
// target_rsd, fewest_windows and stop_on_scatter.
struct VirtualClock {
  bool on = false;
  bool warmup_until_drained = true;
  double startup_s = 2.0;
  double target_rsd = MeasureConfig{}.target_rsd;
  int fewest_windows = MeasureConfig{}.fewest_windows;
  bool stop_on_scatter = MeasureConfig{}.stop_on_scatter;
};
// Those six options; `simulated_help` and `startup_help` describe the
// first and the third as this workload uses them.
std::vector<OptionSpec> virtual_clock_option_specs(const std::string& simulated_help,
                                                   const std::string& startup_help);
VirtualClock read_virtual_clock(const Options& o);

// A modelled workload's measurement (synthetic and replay with
// simulated_time): o's throughput is the level, measured again by the
// harness's rule on a virtual clock (simulate_measurement; racing against
// ctx.stop_below included) in steps of the configuration's batch_size x
// grad_accum; o gets what that measured, its metrics, and start-up plus the
// rule's seconds. The virtual loader waits for data as o's
// data_wait_fraction says (else 1 - gpu_busy; never, when o's starved_share
// says its loader kept ahead), with batches_before_first_step() queued at
// the start, so that the warm-up's drain rule plays out as it would for
// real; its queues are found full (the warm-up's `ahead` rule) as o's
// warmup_ahead says, else wherever the loader never waits. Steps scatter by 15% (relative), or, given `window_rsd` > 0 (a
// recorded measurement's spread), by what makes its windows scatter that
// much.
void measure_on_virtual_clock(Outcome& o, const Assignment& config, const TrialContext& ctx, std::uint64_t seed,
                              const VirtualClock& clock, double window_rsd = 0);

}  // namespace autotune
