#pragma once
// Racing inside a trial (workloads/measure.hpp): the bar the tuner gives each
// trial, and what a raced trial may and may not be used for. A raced trial
// stopped as soon as it was surely below the bar: its throughput is a real
// but shorter measurement, good enough to tell the strategy, never enough to
// be the answer or a confirmation candidate.
#include <vector>

#include "tuner/record/study.hpp"

namespace autotune {

// What an ok trial's own measurement supports as its throughput, for a bar:
// the one-sided 95% lower bound of its mean, throughput x (1 - t x rsd /
// sqrt(n)), with rsd its windows' spread (throughput_rsd) and n the windows
// its throughput averages (`mean_windows`, else the last kMeanWindows of its
// `windows`: the harness's and autotune_trial's default rsd_windows); without
// a window count (a job that
// reports only a spread, or repeats), throughput x (1 - 2 x rsd). The
// throughput itself when it reports no spread.
inline constexpr int kMeanWindows = 5;
double supported_throughput(const Outcome& o);

// The bar for the next trial: (1 - margin) x the highest supported
// throughput among the trials measured in full; 0 (measure in full) while
// there is none, or when margin < 0 (racing off).
double race_bar(const std::vector<TrialRecord>& trials, double margin);

// The fastest ok trial measured in full, or nullptr.
const TrialRecord* best_full_trial(const std::vector<TrialRecord>& trials);

}  // namespace autotune
