#include "tuner/record/tuning_time.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/metric_names.hpp"

namespace autotune {
namespace {

void add(TuningTime& t, const Outcome& o) {
  t.total_s += o.seconds;
  ++t.trials;
  if (o.has(metric::worker_started)) ++t.workers_started;
  if (!o.ok()) {
    t.failed_s += o.seconds;
    ++t.failed;
    return;
  }
  const double measure = std::clamp(o.get(metric::measure_seconds).value_or(0), 0.0, o.seconds);
  const double warmup = std::clamp(o.get(metric::warmup_seconds).value_or(0), 0.0, measure);
  const double startup = std::clamp(o.startup_seconds().value_or(0), 0.0, o.seconds - measure);
  t.warmup_s += warmup;
  t.timed_s += measure - warmup;
  t.startup_s += startup;
  t.other_s += o.seconds - measure - startup;
  if (o.raced()) {
    t.raced_s += o.seconds;
    ++t.raced;
  }
}

}  // namespace

std::string format_duration(double s) {
  if (s < 60) return fmt::format("{:.0f}s", s);
  if (s < 3600) return fmt::format("{:.0f}m{:02.0f}s", std::floor(s / 60), std::fmod(s, 60));
  return fmt::format("{:.0f}h{:02.0f}m", std::floor(s / 3600), std::fmod(s / 60, 60));
}

TuningTime tuning_time(const Study& s) {
  TuningTime t;
  // Every measurement the run made, after the search too: each costs the user's time.
  for (const auto* runs : {&s.trials, &s.confirmations, &s.explanations, &s.baseline_again, &s.answer_again,
                           &s.controls})
    for (const auto& r : *runs) add(t, r.outcome);
  return t;
}

std::string describe(const TuningTime& t) {
  // Under half a second (the built-in harness forked in-process) it says nothing.
  std::string out = t.startup_s >= 0.5 ? fmt::format("start-up {}, ", format_duration(t.startup_s)) : std::string();
  out += fmt::format("warm-up {}, timed {}, other {}", format_duration(t.warmup_s), format_duration(t.timed_s),
                     format_duration(t.other_s));
  if (t.failed > 0)
    out += fmt::format("; failures {} ({} trial{})", format_duration(t.failed_s), t.failed, t.failed == 1 ? "" : "s");
  if (t.raced > 0)
    out += fmt::format("; raced {} ({} trial{})", format_duration(t.raced_s), t.raced, t.raced == 1 ? "" : "s");
  if (t.workers_started > 0)
    out += fmt::format("; {} warm worker{} for {} trials", t.workers_started, t.workers_started == 1 ? "" : "s",
                       t.trials);
  return out;
}

}  // namespace autotune
