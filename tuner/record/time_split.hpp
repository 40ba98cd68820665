#pragma once
// Where a trial's time went, and why the answer is faster than the baseline,
// in DESIGN's terms: the trainer either waits for the loader (T_wait) or
// computes (T_compute); U = T_compute / (T_compute + T_wait). Read from the
// metrics every trial source reports: `data_wait_fraction` (the built-in
// harness, the autotune_trial helper), `compute_busy`, `gpu_busy` (device
// time over wall time, on a GPU).
#include <optional>
#include <string>

#include "core/outcome.hpp"

namespace autotune {

struct TimeSplit {
  std::optional<double> data_wait;    // share of wall time waiting for the next batch
  std::optional<double> compute;      // the rest: 1 - data_wait (or compute_busy when only that is known)
  std::optional<double> device_busy;  // gpu_busy, where known
  bool known() const { return data_wait.has_value(); }
  // "loader-bound" (waits more than half the time), "partly loader-bound"
  // (a tenth or more), "compute-bound"; empty when unknown.
  std::string bound() const;
};

TimeSplit time_split(const Outcome& o);

// "waiting for data 62%, computing 38%, device busy 35% (loader-bound)";
// empty when unknown.
std::string describe(const TimeSplit& s);

// One sentence on the bottleneck that moved between the baseline and the
// answer ("the loader no longer starves the trainer: ..."); empty when either
// split is unknown.
std::string explain_speedup(const TimeSplit& baseline, const TimeSplit& best);

// For a job of several data-parallel ranks, the rank that held it back: the
// one that waited for data the most, where it waited clearly more than the
// rank that waited least ("rank 1 starved: it waited for data 34% of its
// time, rank 0 5%"), and the slowest rank's pace where the ranks' paces
// differ. Empty for one rank, or when the ranks kept level.
std::string rank_starved(const Outcome& o);

}  // namespace autotune
