// Drift control (tuner/record/drift.hpp): a trial is read against the control
// measured nearest it only when the control's figures were taken under
// different loads from other processes; between two figures under one load
// the difference is run-to-run scatter, and no factor is applied.
#include <gtest/gtest.h>

#include "core/metric_names.hpp"
#include "tuner/record/drift.hpp"

namespace autotune {
namespace {

TrialRecord record(int trial, Config c, double throughput, double foreign) {
  Outcome o;
  o.status = Status::ok;
  o.throughput = throughput;
  o.set(metric::foreign_cores, foreign);
  return {trial, std::move(c), o, false};
}

// Trial 1 is the control (x=0) at 100; trial 5 (x=1) measured 90 after the
// control, re-measured as trial 4, read 50.
Study study(double control_load_then, double control_load_again) {
  Study s;
  s.trials = {record(1, {0}, 100, control_load_then), record(5, {1}, 90, control_load_again)};
  s.controls = {record(4, {0}, 50, control_load_again)};
  return s;
}

TEST(Drift, AControlThatReadsLowerUnderMoreLoadLiftsTheTrialsNearIt) {
  Study s = study(0.0, 1.0);
  apply_drift_control(s, {0});
  EXPECT_DOUBLE_EQ(s.trials[1].outcome.throughput, 180);
  EXPECT_DOUBLE_EQ(*s.trials[1].outcome.get(metric::throughput_measured), 90);
  EXPECT_DOUBLE_EQ(*s.trials[1].outcome.get(metric::drift), 2.0);
  EXPECT_DOUBLE_EQ(drift_factor_now(s, {0}), 2.0);
}

TEST(Drift, TwoControlFiguresUnderTheSameLoadAreScatterNotDrift) {
  Study s = study(0.2, 0.4);
  apply_drift_control(s, {0});
  EXPECT_DOUBLE_EQ(s.trials[1].outcome.throughput, 90);
  EXPECT_DOUBLE_EQ(*s.trials[1].outcome.get(metric::drift), 1.0);
  EXPECT_DOUBLE_EQ(drift_factor_now(s, {0}), 1.0);
  EXPECT_DOUBLE_EQ(largest_drift(s), 0.0);
}

}  // namespace
}  // namespace autotune
