#pragma once
// Racing inside a trial (workloads/measure.hpp): the bar the tuner gives each
// trial, and what a raced trial may and may not be used for. A raced trial
// stopped as soon as it was surely below the bar: its throughput is a real
// but shorter measurement, good enough to tell the strategy, never enough to
// be the answer or a confirmation candidate.
#include <vector>

#include "tuner/study.hpp"

namespace autotune {

// Whether the trial was stopped early below its bar (metric raced = 1).
bool was_raced(const Outcome& o);

// What an ok trial's own measurement supports as its throughput, for a bar:
// throughput x (1 - 2 x throughput_rsd), the spread of its timed windows (or
// repeats); the throughput itself when it reports no spread.
double supported_throughput(const Outcome& o);

// The bar for the next trial: (1 - margin) x the highest supported
// throughput among the trials measured in full; 0 (measure in full) while
// there is none, or when margin < 0 (racing off).
double race_bar(const std::vector<TrialRecord>& trials, double margin);

// The fastest ok trial measured in full, or nullptr.
const TrialRecord* best_full_trial(const std::vector<TrialRecord>& trials);

}  // namespace autotune
