#include "tuner/record/drift.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "core/metric_names.hpp"

namespace autotune {
namespace {

double measured(const Outcome& o) { return o.get(metric::throughput_measured).value_or(o.throughput); }

struct ControlPoint {
  int trial = 0;
  double throughput = 0;
  double rsd = 0;
  double load = 0;  // foreign_cores while it ran
};

// Other processes' cores that must separate two control figures before
// their difference is read as drift: on a machine whose load did not change,
// two single measurements of one configuration differ by the run-to-run
// scatter (seen: 45% on a quiet 2-core machine, bench/results/shared_machine.md),
// which one factor would then put on every trial near the second.
constexpr double kLoadChange = 0.5;

ControlPoint point_of(const TrialRecord& t, double throughput) {
  return {t.trial, throughput, t.outcome.get(metric::throughput_rsd).value_or(0),
          t.outcome.get(metric::foreign_cores).value_or(0)};
}

}  // namespace

std::optional<Config> drift_control_config(const Study& s, const std::vector<Config>& initial) {
  const TrialRecord* first = nullptr;
  for (const auto& t : s.trials)
    if (t.outcome.ok() && !t.outcome.raced()) {
      if (!initial.empty() && t.config == initial.front()) return t.config;
      if (!first || t.trial < first->trial) first = &t;
    }
  if (!initial.empty()) return std::nullopt;  // the baseline did not run ok: no reference to read against
  return first ? std::optional<Config>(first->config) : std::nullopt;
}

namespace {

// The control's figures in trial order, its search trial first; empty
// without one.
std::vector<ControlPoint> control_points(const Study& s, const Config& control) {
  std::vector<ControlPoint> points;
  for (const auto& t : s.trials)
    if (t.config == control && t.outcome.ok() && !t.outcome.raced()) {
      points.push_back(point_of(t, measured(t.outcome)));
      break;
    }
  if (points.empty()) return points;
  for (const auto& c : s.controls)
    if (c.outcome.ok() && c.outcome.throughput > 0)
      points.push_back(point_of(c, c.outcome.throughput));
  return points;
}

// The factor for a trial numbered `trial`: the reference over the control
// measured nearest it, 1 within the noise of the two.
double factor_at(const std::vector<ControlPoint>& points, long trial) {
  const ControlPoint& reference = points.front();
  const ControlPoint* near = &points.front();
  for (const auto& p : points)
    if (std::labs(p.trial - trial) < std::labs(near->trial - trial) ||
        (std::labs(p.trial - trial) == std::labs(near->trial - trial) && p.trial < near->trial))
      near = &p;
  if (std::abs(near->load - reference.load) < kLoadChange) return 1.0;
  const double factor = reference.throughput / near->throughput;
  const double noise = std::max(0.05, 2 * std::hypot(reference.rsd, near->rsd));
  if (std::abs(std::log(factor)) <= noise) return 1.0;
  return std::clamp(factor, 0.25, 4.0);
}

}  // namespace

double drift_factor_now(const Study& s, const Config& control) {
  const auto points = control_points(s, control);
  if (points.size() < 2) return 1.0;
  return factor_at(points, std::numeric_limits<int>::max());
}

void apply_drift_control(Study& s, const Config& control) {
  const auto points = control_points(s, control);
  if (points.size() < 2) return;
  for (auto& t : s.trials) {
    if (!t.outcome.ok()) continue;
    const double factor = factor_at(points, t.trial);
    const double raw = measured(t.outcome);
    t.outcome.set(metric::throughput_measured, raw);
    t.outcome.set(metric::drift, factor);
    t.outcome.throughput = raw * factor;
  }
}

double largest_drift(const Study& s) {
  double most = 0;
  for (const auto& t : s.trials)
    if (const auto f = t.outcome.get(metric::drift)) most = std::max(most, std::abs(*f - 1.0));
  return most;
}

}  // namespace autotune
