#pragma once
// A broken set-up, told apart from bad configurations: when a run's first
// trials all fail with one set-up failure (workloads/setup_failure.hpp: a
// program or a module not found, ...), every later trial would fail so too
// and the budget would burn for nothing. The tuning loop stops there
// (RunEnd::setup_failed), and a journal's reader (the report) finds the
// same end by the same rule.
#include <optional>
#include <string>
#include <vector>

#include "tuner/record/study.hpp"

namespace autotune {

// How many trials must fail alike before the run stops: three trials of
// different configurations (the baseline, then the search's first) that fail
// with one set-up failure fail of the set-up.
inline constexpr int kSetupTrials = 3;

// `trials`: a run's finished search trials in the order they finished. The
// failures after its last ok trial (all of them, when none was ok), when
// the first min(kSetupTrials, budget_trials) of them (budget_trials 0: no
// cap on trials) failed with one set-up failure: that failure. Else nullopt.
std::optional<SetupFault> setup_stop(const std::vector<TrialRecord>& trials, int budget_trials);

// The run's end in words, for the terminal and the report: "3 trials in a
// row failed alike before measuring anything, ...: <cause>".
std::string describe_setup_stop(const SetupFault& f, int budget_trials);

}  // namespace autotune
