// Where a tuning run's minutes went: start-up, warm-up, timed windows, the
// rest, failures and raced trials, from each trial's seconds and metrics.
#include "tuner/record/tuning_time.hpp"

#include <gtest/gtest.h>

namespace autotune {
namespace {

TrialRecord trial(double seconds, std::map<std::string, double> metrics) {
  TrialRecord r;
  r.outcome = Outcome::success(100);
  r.outcome.seconds = seconds;
  r.outcome.metrics = std::move(metrics);
  return r;
}

TEST(TuningTime, StartUpIsItsOwnPartAndOtherIsWhatNoPartExplains) {
  Study s;
  // A GPU command trial: 11 s before the first step, 0.5 s warm-up, 2.5 s timed, 0.5 s teardown.
  s.trials.push_back(trial(14.5, {{"startup_seconds", 11}, {"warmup_seconds", 0.5}, {"measure_seconds", 3}}));
  // A script that reports no start-up: all of its rest is "other".
  s.trials.push_back(trial(6, {{"warmup_seconds", 1}, {"measure_seconds", 4}}));
  Outcome failed = Outcome::failure(Status::oom, "out of memory");
  failed.seconds = 7;
  s.trials.push_back({3, {}, failed, false});
  const TuningTime t = tuning_time(s);
  EXPECT_DOUBLE_EQ(t.total_s, 27.5);
  EXPECT_DOUBLE_EQ(t.startup_s, 11);
  EXPECT_DOUBLE_EQ(t.warmup_s, 1.5);
  EXPECT_DOUBLE_EQ(t.timed_s, 5.5);
  EXPECT_DOUBLE_EQ(t.other_s, 0.5 + 2);
  EXPECT_DOUBLE_EQ(t.failed_s, 7);
  EXPECT_DOUBLE_EQ(t.startup_s + t.warmup_s + t.timed_s + t.other_s + t.failed_s, t.total_s) << "every second once";
  EXPECT_EQ(describe(t), "start-up 11s, warm-up 2s, timed 6s, other 2s; failures 7s (1 trial)");
}

TEST(TuningTime, AStartUpLongerThanTheTrialAllowsIsCutToWhatIsLeft) {
  Study s;
  // Clocks of two machines (a Slurm node) can disagree: never more than the trial's unmeasured rest.
  s.trials.push_back(trial(5, {{"startup_seconds", 9}, {"warmup_seconds", 0.5}, {"measure_seconds", 3}}));
  const TuningTime t = tuning_time(s);
  EXPECT_DOUBLE_EQ(t.startup_s, 2);
  EXPECT_DOUBLE_EQ(t.other_s, 0);
}

TEST(TuningTime, NoStartUpPartWhereNoTrialReportedOne) {
  Study s;
  s.trials.push_back(trial(6, {{"warmup_seconds", 1}, {"measure_seconds", 4}}));
  EXPECT_EQ(describe(tuning_time(s)).rfind("warm-up 1s, timed 3s, other 2s", 0), 0u) << describe(tuning_time(s));
}

}  // namespace
}  // namespace autotune
