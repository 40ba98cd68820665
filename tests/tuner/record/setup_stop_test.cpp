// The rule that ends a run on a broken set-up: the failures after the last
// ok trial begin with three (or the budget's trials, when fewer) that failed
// with one set-up failure.
#include "tuner/record/setup_stop.hpp"

#include <gtest/gtest.h>

namespace autotune {
namespace {

TrialRecord ok_trial(int n) { return {n, {}, Outcome::success(100), false}; }

TrialRecord setup_trial(int n, SetupFailure kind, const std::string& missing) {
  Outcome o = Outcome::failure(Status::error, "exited with status 127");
  mark_setup_failure(o, {kind, missing});
  return {n, {}, o, false};
}

TrialRecord other_failure(int n) { return {n, {}, Outcome::failure(Status::error, "exited with status 1"), false}; }

const SetupFault kPython{SetupFailure::command_not_found, "pytohn3"};

TEST(SetupStop, ThreeTrialsFailingWithOneSetUpFailureStopTheRun) {
  std::vector<TrialRecord> t;
  for (int i = 1; i <= 2; ++i) {
    t.push_back(setup_trial(i, kPython.kind, kPython.missing));
    EXPECT_FALSE(setup_stop(t, 30)) << i << " trials";
  }
  t.push_back(setup_trial(3, kPython.kind, kPython.missing));
  EXPECT_EQ(setup_stop(t, 30), kPython);
  EXPECT_EQ(setup_stop(t, 0), kPython);  // a time budget
}

TEST(SetupStop, DifferentFailuresDoNotStopIt) {
  const std::vector<TrialRecord> modules = {setup_trial(1, SetupFailure::module_not_found, "torch"),
                                            setup_trial(2, SetupFailure::module_not_found, "torchvision"),
                                            setup_trial(3, SetupFailure::module_not_found, "torch")};
  EXPECT_FALSE(setup_stop(modules, 30));
  const std::vector<TrialRecord> mixed = {setup_trial(1, kPython.kind, kPython.missing), other_failure(2),
                                          setup_trial(3, kPython.kind, kPython.missing)};
  EXPECT_FALSE(setup_stop(mixed, 30));
}

TEST(SetupStop, OnlyTheFailuresAfterTheLastOkTrialCount) {
  std::vector<TrialRecord> t = {setup_trial(1, kPython.kind, kPython.missing),
                                setup_trial(2, kPython.kind, kPython.missing), ok_trial(3),
                                setup_trial(4, kPython.kind, kPython.missing),
                                setup_trial(5, kPython.kind, kPython.missing)};
  EXPECT_FALSE(setup_stop(t, 30));
  t.push_back(setup_trial(6, kPython.kind, kPython.missing));  // three in a row since trial 3: it broke since
  EXPECT_EQ(setup_stop(t, 30), kPython);
  // What follows the first three (trials in flight) does not undo it.
  t.push_back(other_failure(7));
  EXPECT_EQ(setup_stop(t, 30), kPython);
}

TEST(SetupStop, ASmallerBudgetNeedsOnlyItsTrials) {
  const std::vector<TrialRecord> one = {setup_trial(1, SetupFailure::no_result, "")};
  EXPECT_EQ(setup_stop(one, 1), (SetupFault{SetupFailure::no_result, ""}));
  EXPECT_FALSE(setup_stop(one, 2));
  EXPECT_NE(describe_setup_stop(kPython, 1).find("the trial failed"), std::string::npos);
  EXPECT_NE(describe_setup_stop(kPython, 30).find("3 trials in a row failed alike"), std::string::npos);
}

TEST(SetupStop, AFailureWithoutTheLabelsIsNoSetUpFailure) {
  const std::vector<TrialRecord> t = {other_failure(1), other_failure(2), other_failure(3)};
  EXPECT_FALSE(setup_stop(t, 30));
  EXPECT_FALSE(setup_stop({}, 30));
}

}  // namespace
}  // namespace autotune
