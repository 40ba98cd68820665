#pragma once
// The scheduler: the one way a trial is made and measured, whichever driver
// asks (tune, compare, sweep). It gives each trial its context (seed,
// timeout, limits, log folder), runs it on an executor, repeats it
// (`workload.repeats`: the median kept) and applies the spec's limits once,
// around the executor.
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <vector>

#include "tuner/run/executor.hpp"
#include "tuner/run/machine_load.hpp"
#include "tuner/run/nvml_reader.hpp"
#include "workloads/workload.hpp"

namespace autotune {

struct Spec;

// What every trial of a run is given.
struct TrialSettings {
  double timeout_s = 0;
  Limits limits;
  int repeats = 1;
  std::filesystem::path log_root;  // trial N logs to <log_root>/trial-N; empty: no logs
  std::uint64_t seed = 0;          // the run's seed
  // Read what the rest of the machine does during each trial (the
  // foreign_cores metric); off for workloads that measure nothing real.
  bool watch_machine = false;
  // ... and its GPUs (a device here, and NVML or nvidia-smi to read it).
  bool watch_gpus = false;
};

// From a spec: its timeout, limits and repeats; logs beside the journal
// (<journal stem>.trials/, absolute: a command trial runs in its own cwd).
TrialSettings trial_settings(const Spec& spec);

// A trial's seed: the run's seed and a key, the trial number, or in
// `compare` the configuration's index (the same noise whichever strategy
// asks for it).
std::uint64_t trial_seed(std::uint64_t run_seed, std::uint64_t key);

// A trial's context before the executor places it.
TrialContext make_trial_context(const TrialSettings& s, int trial, std::uint64_t seed_key);

// A measured outcome that breaks a limit becomes `invalid`, naming the limit.
Outcome apply_limits(Outcome o, const Limits& limits);

// The repeats of one configuration as one outcome: the median throughput,
// with the metrics of the median run, `throughput_rsd` and `repeats`, and
// ram_bytes / vram_bytes as the maximum over the runs (feasibility is
// judged on the worst run). All runs must be ok.
Outcome combine_repeats(std::vector<Outcome> runs);

class Scheduler {
 public:
  Scheduler(Executor& executor, TrialSettings settings);

  struct Done {
    int trial = 0;
    Assignment config;
    Outcome outcome;  // repeats combined, limits applied
  };

  bool has_room() const { return in_flight() < m_executor.capacity(); }
  int in_flight() const { return static_cast<int>(m_trials.size()); }

  // Starts trial number `trial` (requires has_room()); its seed comes from
  // `seed_key` (default: the trial number); `stop_below` is its racing bar
  // (0: measure in full). A raced repeat ends the trial's repeats.
  void submit(int trial, const Assignment& config, std::optional<std::uint64_t> seed_key = std::nullopt,
              double stop_below = 0);
  // The same with a context made by the caller (a test that sets its own
  // seed, timeout or log folder).
  void submit(int trial, const Assignment& config, const TrialContext& ctx);
  // The next trial whose every repeat finished (or whose repeat failed),
  // waiting at most `wait` for a measurement to finish.
  std::optional<Done> wait_any(std::chrono::milliseconds wait);
  // Waits for the next finished trial however long it takes.
  Done wait_next();
  // Stops every running trial and waits for them; they are forgotten.
  void stop_all();

 private:
  struct InFlight {
    Assignment config;
    TrialContext ctx;  // the first repeat's
    std::vector<Outcome> runs;
    double seconds = 0;
    LoadSnapshot load_from;  // the machine when it started
    std::optional<GpuSnapshot> gpus_from;
    std::uint64_t started_us = 0;  // wall clock, for NVML's samples since then
  };
  void start_repeat(int trial, InFlight& t);
  // The GPUs' other processes: through NVML where it opened and answers,
  // else through nvidia-smi.
  std::optional<GpuSnapshot> gpu_snapshot() const;

  Executor& m_executor;
  TrialSettings m_settings;
  std::optional<NvmlReader> m_nvml;  // opened when watching GPUs
  std::map<int, InFlight> m_trials;
};

}  // namespace autotune
