#pragma once
// Where the minutes of a tuning run went: start-up (from the trial's start to
// its first step: a process, imports, CUDA's start, building the pipeline),
// warm-up, timed windows, the rest of each trial (teardown, writing the
// result), and what was lost to failed trials and spent in raced ones. Read
// from each trial's `seconds` and the harness's `startup_seconds`,
// `warmup_seconds` and `measure_seconds` metrics (the built-in workloads and
// the autotune_trial helper report them; other scripts count wholly as
// "other").
#include <string>

#include "tuner/record/study.hpp"

namespace autotune {

struct TuningTime {
  double total_s = 0;   // every trial's seconds, confirmations included
  double startup_s = 0; // ok trials: from the trial's start to its first step
  double warmup_s = 0;  // ok trials: warming up the pipeline
  double timed_s = 0;   // ok trials: in timed windows
  double other_s = 0;   // ok trials: the rest (teardown; all of it where no start-up is reported)
  double failed_s = 0;  // failed trials, whole
  double raced_s = 0;   // raced trials, whole (also counted in the three ok parts)
  int failed = 0;
  int raced = 0;
  int workers_started = 0;  // warm workers started (workload `warm: true`); 0 for cold trials
  int trials = 0;           // trials and confirmations counted
};

TuningTime tuning_time(const Study& s);

// "start-up 40s, warm-up 18s, timed 30s, other 6s; failures 4s (3 trials); raced 8s (5 trials)",
// then "; 2 warm workers for 14 trials" under `warm: true`
// (no start-up part under half a second: none reported, or a forked harness's)
std::string describe(const TuningTime& t);

std::string format_duration(double seconds);  // "42s", "3m05s", "1h12m"

}  // namespace autotune
