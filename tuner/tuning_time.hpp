#pragma once
// Where the minutes of a tuning run went: warm-up, timed windows, the rest of
// each trial (start-up, building the pipeline, teardown), and what was lost to
// failed trials and spent in raced ones. Read from each trial's `seconds` and
// the harness's `warmup_seconds` / `measure_seconds` metrics (the built-in
// workloads and the autotune_trial helper report them; other scripts count
// wholly as "other").
#include <string>

#include "tuner/study.hpp"

namespace autotune {

struct TuningTime {
  double total_s = 0;   // every trial's seconds, confirmations included
  double warmup_s = 0;  // ok trials: warming up the pipeline
  double timed_s = 0;   // ok trials: in timed windows
  double other_s = 0;   // ok trials: the rest (start-up, teardown)
  double failed_s = 0;  // failed trials, whole
  double raced_s = 0;   // raced trials, whole (also counted in the three ok parts)
  int failed = 0;
  int raced = 0;
};

TuningTime tuning_time(const Study& s);

// "warm-up 18s, timed 30s, other 6s; failures 4s (3 trials); raced 8s (5 trials)"
std::string describe(const TuningTime& t);

}  // namespace autotune
