#pragma once
// One trial of the built-in harness, the cpu and cuda workloads alike: the
// model's shape and the tuned parameters read, the host memory reading, the
// training steps over a Loader timed by workloads/measure.hpp, and the
// outcome they start from. A workload keeps only its own part: a Trainer
// (its micro-batch and optimizer step), its precisions, its device's memory
// and busy readings.
//
// Call order in a workload's trial: read_trial_knobs, its own checks,
// over_ram_estimate, begin_host_memory, the loader and the Trainer,
// run_trial_steps, measured_outcome, its own metrics.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "workloads/loader.hpp"
#include "workloads/measure.hpp"
#include "workloads/pipeline_knobs.hpp"
#include "workloads/workload.hpp"

namespace autotune {

// The MLP both workloads train: depth hidden layers of width, then the classifier.
struct MlpShape {
  std::int64_t input_dim = 256, width = 256, depth = 2, classes = 10;
  std::vector<std::int64_t> dims() const;  // input_dim, width x depth, classes
  double parameters() const;
  // Multiply-adds x 2 of forward and backward per sample (the input's own
  // gradient is not computed).
  double flops_per_sample() const;
};

// Reads the shape (options input_dim, width, depth, classes) and the tuned
// parameters (read_pipeline_knobs); empty on success, else why the
// configuration is unusable (an `error` outcome).
std::string read_trial_knobs(const Options& opts, const Assignment& config, const TrialContext& ctx, MlpShape& shape,
                             PipelineKnobs& k);

// `invalid` when the estimated host memory is over the spec's ram limit (0:
// none), so the trial allocates nothing; nullopt when it fits.
std::optional<Outcome> over_ram_estimate(double estimate, double ram_limit);

// Resets the process's peak resident set (a warm worker's trials each report
// their own) and returns what it holds now: ram_baseline_bytes.
double begin_host_memory();

// A workload's part of the harness's step: grad_accum calls of micro_batch()
// (one loader batch each), then optimizer_step(). Both add to the step's
// StepResult (samples, compute seconds); the harness marks its queue state.
class Trainer {
 public:
  virtual ~Trainer() = default;
  // One micro-batch; false when the loader has stopped (the step fails).
  virtual bool micro_batch(StepResult& s) = 0;
  virtual void optimizer_step(StepResult& s) = 0;
  // After the timed windows, before the loader stops: it still serves batches.
  virtual void after_measure(const MeasureResult&) {}
};

struct TrialSteps {
  MeasureResult r;
  std::chrono::steady_clock::time_point began;  // the first step's start: startup_seconds ends here
  bool loader_failed = false;                   // a worker failed to allocate its buffers
  double wait_fraction = 0;                     // the loader's wait over the measurement's seconds
  double starved_share = 0;                     // of the loader's calls, those that found no batch ready
};

// Times the trainer's steps (measure_steps with k.measure), calls
// after_measure, stops the loader and reads it. Exceptions propagate.
TrialSteps run_trial_steps(const PipelineKnobs& k, Loader& loader, Trainer& t);

// The outcome a measured trial starts from: `host_oom` when a loader worker
// failed, `error` without a timed window, else `ok` with the throughput,
// add_measure_metrics, startup_seconds, ram_bytes (the peak, read now),
// ram_baseline_bytes and loss.
Outcome measured_outcome(const TrialSteps& steps, const TrialContext& ctx, double ram_baseline, double loss);

}  // namespace autotune
