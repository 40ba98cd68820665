#include "tuner/record/racing.hpp"

#include <algorithm>
#include <cmath>

#include "core/metric_names.hpp"
#include "workloads/measure.hpp"

namespace autotune {

double supported_throughput(const Outcome& o) {
  const double rsd = std::max(0.0, o.get(metric::throughput_rsd).value_or(0));
  // The windows the throughput averages: as reported, else the last
  // kMeanWindows of those it measured.
  const double windows = static_cast<double>(
      o.get(metric::mean_windows).value_or(std::min<long long>(o.get(metric::windows).value_or(0), kMeanWindows)));
  if (windows < 2 || o.get(metric::repeats)) return std::max(0.0, o.throughput * (1 - 2 * rsd));
  // The lower 95% bound of that mean. A measurement that settled early (3
  // or 4 windows, stopped because they agreed) was picked for its low
  // spread: the 90% upper bound on its true spread stands in for it.
  const int n = static_cast<int>(std::min(windows, 1000.0));
  const double spread = o.has(metric::settled_early) ? spread_upper_bound90(rsd, n) : rsd;
  return std::max(0.0, o.throughput * (1 - student_t95(n - 1) * spread / std::sqrt(static_cast<double>(n))));
}

double race_bar(const std::vector<TrialRecord>& trials, double margin) {
  if (margin < 0) return 0;
  double best = 0;
  for (const auto& t : trials)
    if (t.outcome.ok() && !t.outcome.raced()) best = std::max(best, supported_throughput(t.outcome));
  return best * (1 - std::min(margin, 1.0));
}

const TrialRecord* best_full_trial(const std::vector<TrialRecord>& trials) {
  const TrialRecord* best = nullptr;
  for (const auto& t : trials)
    if (t.outcome.ok() && !t.outcome.raced() && (!best || t.outcome.throughput > best->outcome.throughput))
      best = &t;
  return best;
}

}  // namespace autotune
