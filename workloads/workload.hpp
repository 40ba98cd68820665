#pragma once
// A workload measures one configuration and reports an Outcome.
//
// measure() runs in the calling process; the tuner's runner decides whether
// that process is the tuner itself (inline, for cheap workloads) or a child
// per trial (isolation). measure() never throws for a failed trial: an
// out-of-memory, a bad configuration or a missing device is an Outcome with a
// status and a reason. It may throw only for bugs.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "core/outcome.hpp"
#include "core/value.hpp"
#include "core/options.hpp"
#include "proc/external_run.hpp"

namespace autotune {

struct Limits {
  double vram_bytes = 0;  // 0 = no limit
  double ram_bytes = 0;   // 0 = no limit
};

// The one rule for the spec's memory limits, for every workload and the
// scheduler: a trial that ran to its end but measured more device memory
// (`vram_peak`) or host memory (`ram_peak`) than a limit allows is
// `invalid`: it does not fit the constraint. A real allocation failure is
// not judged here: it stays `oom` or `host_oom`. Device memory is judged
// first; an outcome that is not ok is left as it is.
void judge_limits(Outcome& o, const Limits& limits, std::optional<double> vram_peak, std::optional<double> ram_peak);

struct TrialContext {
  int trial = 0;                    // 1-based trial number in the run
  std::uint64_t seed = 0;           // per-trial seed for any noise the workload adds
  double timeout_s = 0;             // 0 = none; the runner enforces it, workloads may use it as a cap
  Limits limits;                    // the spec's constraints
  std::filesystem::path log_dir;    // per-trial folder for logs; empty = keep none
  int slot = 0;                     // the parallel slot running it (0-based)
  // Extra environment for a trial's child process (e.g. CUDA_VISIBLE_DEVICES
  // of its slot); in-process workloads ignore it.
  std::map<std::string, std::string> env;
  // CPUs a trial's child process is pinned to (empty: not pinned).
  std::vector<int> cpus;
  // Racing: the throughput (samples/s) this trial must beat to matter; a
  // harness may stop it as soon as it is surely below (metric raced = 1).
  // 0: measure in full. Command trials get it as AUTOTUNE_STOP_BELOW.
  double stop_below = 0;
  // Set by the scheduler when its trials must stop (the tool itself failed);
  // a runner stops a running child as it does on Ctrl-C. May be null.
  std::shared_ptr<const std::atomic<bool>> stop;
  // When the trial started (the executor sets it as a slot takes the trial,
  // so each repeat and each executor counts from its own start):
  // a harness reports the seconds from here to its first step as
  // `startup_seconds` (building the pipeline, CUDA's start; in a forked child
  // the same monotonic clock). Command trials get the wall-clock equivalent
  // as AUTOTUNE_TRIAL_START.
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
};

// Seconds from `a` to `b`, never negative.
inline double seconds_between(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::max(0.0, std::chrono::duration<double>(b - a).count());
}

class Workload {
 public:
  virtual ~Workload() = default;
  virtual std::string_view kind() const = 0;
  virtual Outcome measure(const Assignment& config, const TrialContext& ctx) = 0;
  // The noise-free answer, where the workload knows it (synthetic, replay):
  // lets `compare` and the tests know the exact optimum. nullopt otherwise.
  virtual std::optional<Outcome> expected(const Assignment& /*config*/) const { return std::nullopt; }

  // A workload whose trial is an external program returns it here; the
  // process executor then starts it instead of forking a child that calls
  // measure(). Built-in (in-process) workloads keep the default: nullopt.
  virtual std::optional<ExternalCommand> external_command(const Assignment& /*config*/,
                                                          const TrialContext& /*ctx*/) const {
    return std::nullopt;
  }
  // Maps what an external_command() run produced into an Outcome. The default
  // is the command contract (docs/guide.md, "The command workload"): timeout, signals,
  // out-of-memory messages, exit status, then the JSON result. Never throws.
  virtual Outcome interpret(const ExternalRun& run, const TrialContext& ctx) const;
};

// What a workload factory gets besides its options.
struct WorkloadEnv {
  std::vector<std::string> parameter_names;  // the space's parameters, in order
  std::filesystem::path spec_dir;            // folder of the spec file
};

// Thrown by a factory when its options are unusable (e.g. a replay table that
// does not parse); the message says what and where.
struct WorkloadConfigError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct WorkloadInfo {
  std::string kind;
  std::string summary;
  std::vector<OptionSpec> options;
  std::function<std::unique_ptr<Workload>(const Options&, const WorkloadEnv&)> make;
  // What the tuner asks of the kind beyond its options, declared here so
  // that no code elsewhere names a kind:
  // its figures are computed, not timed: the machine's other work does not
  // move them, so none is watched (no machine: line, drift control, waits);
  bool simulated = false;
  // search.remeasure's default: side-by-side pairs of the baseline and the
  // answer after the search;
  int remeasure_pairs = 0;
  // with warm: true, a worker process of autotune's own (`autotune
  // __worker`) serves its trials;
  bool builtin_worker = false;
  // the `precision` values it measures (empty: any); validate warns of others.
  std::vector<std::string> precisions;
};

// Every workload kind built into this binary, in a stable order.
const std::vector<WorkloadInfo>& workload_catalog();
const WorkloadInfo* find_workload(std::string_view kind);
std::vector<std::string> workload_kinds();

}  // namespace autotune
