// The facts the summary and the report share: here, other processes' share
// of the GPU's SM time (foreign_gpu_busy) as both say it.
#include "tuner/report/report_facts.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "core/metric_names.hpp"

namespace autotune {
namespace {

TrialRecord trial(int n, std::optional<double> busy) {
  TrialRecord t;
  t.trial = n;
  t.outcome = Outcome::success(100);
  if (busy) t.outcome.set(metric::foreign_gpu_busy, *busy);
  return t;
}

TEST(ForeignGpuBusy, TheSummaryNamesTheTrialOtherProcessesTookTheMostFrom) {
  EXPECT_EQ(foreign_gpu_busy_words({trial(1, std::nullopt), trial(2, 0.0), trial(3, 0.004)}), "")
      << "nothing read, or under 1%: nothing said";
  EXPECT_EQ(foreign_gpu_busy_words({trial(1, 0.0), trial(7, 0.35)}),
            "other processes used 35% of the GPU's SM time during trial 7");
  EXPECT_EQ(foreign_gpu_busy_words({trial(3, 0.1), trial(7, 0.35), trial(9, 0.2)}),
            "other processes used the GPU's SM time during 3 trials, up to 35% during trial 7");
}

TEST(ForeignGpuBusy, TheReportNotesItOnTheTrial) {
  EXPECT_EQ(foreign_gpu_busy_note(trial(7, 0.35).outcome), "other processes used 35% of the GPU's SM time meanwhile");
  EXPECT_EQ(foreign_gpu_busy_note(trial(7, 0.0).outcome), "");
  EXPECT_EQ(foreign_gpu_busy_note(trial(7, std::nullopt).outcome), "");
}

}  // namespace
}  // namespace autotune
