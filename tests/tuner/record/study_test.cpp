// The speedup a study states (tuner/record/study.hpp): side-by-side pairs
// taken under load carry, beside them, the ratio of the answer's and the
// baseline's measurements taken while the machine was quiet.
#include <gtest/gtest.h>

#include "core/metric_names.hpp"
#include "tuner/record/study.hpp"

namespace autotune {
namespace {

TrialRecord record(int trial, Config c, double throughput, double foreign) {
  Outcome o;
  o.status = Status::ok;
  o.throughput = throughput;
  o.metrics[metric::foreign_cores] = foreign;
  return {trial, std::move(c), o, false};
}

// The baseline {0} and the answer {1}: searched quiet (100 and 200, then
// the answer again at 190 under load), the control measured again quiet
// (110), and 3 pairs under `pair_load` reading 1.25x.
Study study(double pair_load) {
  Study s;
  s.trials = {record(1, {0}, 100, 0.0), record(2, {1}, 200, 0.1), record(3, {1}, 150, 1.0)};
  s.controls = {record(4, {0}, 110, 0.2)};
  for (int i = 0; i < 3; ++i) {
    s.baseline_again.push_back(record(5 + 2 * i, {0}, 80, pair_load));
    s.answer_again.push_back(record(6 + 2 * i, {1}, 100, pair_load));
  }
  s.baseline = s.trials[0];
  s.best = Config{1};
  s.best_outcome = s.trials[1].outcome;
  return s;
}

TEST(StudySpeedup, PairsUnderLoadCarryTheRatioMeasuredWhileQuiet) {
  const auto x = study(1.0).speedup();
  ASSERT_TRUE(x && x->remeasured);
  EXPECT_NEAR(x->ratio, 1.25, 1e-9);
  ASSERT_TRUE(x->quiet.has_value());
  // Quiet: the answer 200 (trial 3 ran under load), the baseline 100 and 110.
  EXPECT_NEAR(x->quiet->ratio, 200.0 / 105.0, 1e-9);
  EXPECT_EQ(x->quiet->answer_runs, 1);
  EXPECT_EQ(x->quiet->baseline_runs, 2);
}

TEST(StudySpeedup, QuietPairsNeedNoSecondFigure) {
  const auto x = study(0.1).speedup();
  ASSERT_TRUE(x && x->remeasured);
  EXPECT_FALSE(x->quiet.has_value());
}

TEST(StudySpeedup, NoQuietFigureWithoutAQuietRunOfTheAnswer) {
  Study s = study(1.0);
  s.trials[1].outcome.metrics[metric::foreign_cores] = 0.9;
  const auto x = s.speedup();
  ASSERT_TRUE(x && x->remeasured);
  EXPECT_FALSE(x->quiet.has_value());
}

}  // namespace
}  // namespace autotune
